package cite

import "testing"

// A quoted phrase that a wrapped line of package documentation cuts in two
// still supports the claim that quotes it whole.
func TestQuoteAcrossAWrappedLine(t *testing.T) {
	body := "Once is an object that will perform exactly one action.\n" +
		"In the terminology of the Go memory model, the return from f “synchronizes\n" +
		"before” the return from any call of once.Do(f).\n"
	report := "# R\n\n- In the terminology of the Go memory model, the return from f “synchronizes before” " +
		"the return from any call of once.Do(f). [1]\n\n## Sources\n[1] sync — https://pkg.go.dev/sync#Once\n"
	res := Check(report, []Document{{Refs: []string{"https://pkg.go.dev/sync#Once"}, Title: "sync", Text: body, Read: true}})
	if len(res.Pairs) != 1 || res.Pairs[0].Verdict != Supported {
		t.Fatalf("pairs %+v, want one supported", res.Pairs)
	}
	// The phrase must still be there: another phrase is not let through.
	res = Check(report, []Document{{Refs: []string{"https://pkg.go.dev/sync#Once"}, Title: "sync",
		Text: "In the terminology of the Go memory model, the return from f “happens\nbefore” the return from any call of once.Do(f).\n", Read: true}})
	if len(res.Pairs) != 1 || res.Pairs[0].Verdict == Supported {
		t.Fatalf("pairs %+v, want the quote missing", res.Pairs)
	}
}
