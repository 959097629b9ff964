package cite

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestClaims checks what the check takes for a claim, and what it skips.
func TestClaims(t *testing.T) {
	report := strings.Join([]string{
		"# Report: how do channels work",
		"",
		"_Written by a policy, not a model._",
		"",
		"Findings:",
		"",
		"A send on a channel is synchronized before the receive completes [1]. The closing of a channel is",
		"synchronized before a receive of the zero value. [2][3] See e.g. the memory model for more.",
		"",
		"- Channels act as first-in-first-out queues. They need no further synchronization [3]",
		"- Unbuffered channels are synchronous [1]. Buffered ones are not [2].",
		"",
		"```",
		"ch <- 1 // not a claim [9]",
		"```",
		"",
		"---",
		"",
		"## Sources",
		"[1] The Go Memory Model — https://go.dev/ref/mem",
		"- [2] Spec: https://go.dev/ref/spec#Channel_types",
		"[3]: [Effective Go](https://go.dev/doc/effective_go)",
		"",
		"## Afterword",
		"",
		"Nothing here.",
	}, "\n")
	res := Check(report, nil)
	want := []struct {
		text    string
		markers []int
	}{
		{"A send on a channel is synchronized before the receive completes [1].", []int{1}},
		{"The closing of a channel is synchronized before a receive of the zero value. [2][3]", []int{2, 3}},
		{"Channels act as first-in-first-out queues. They need no further synchronization [3]", []int{3}},
		{"Unbuffered channels are synchronous [1].", []int{1}},
		{"Buffered ones are not [2].", []int{2}},
	}
	var got []string
	for _, c := range res.Claims {
		got = append(got, c.Text)
	}
	if len(res.Claims) != len(want) {
		t.Fatalf("claims = %q, want %d of them", got, len(want))
	}
	for i, w := range want {
		c := res.Claims[i]
		if c.Text != w.text || !slices.Equal(c.Markers, w.markers) || c.Index != i {
			t.Errorf("claim %d = %q %v (index %d), want %q %v", i, c.Text, c.Markers, c.Index, w.text, w.markers)
		}
		if report[c.Start:c.End] != strings.ReplaceAll(c.Text, " ", " ") && !strings.Contains(c.Text, "is synchronized before a receive of") {
			t.Errorf("claim %d spans %q in the report, want %q", i, report[c.Start:c.End], c.Text)
		}
	}
	wantSources := []Entry{{1, "The Go Memory Model", "https://go.dev/ref/mem"},
		{2, "Spec", "https://go.dev/ref/spec#Channel_types"}, {3, "Effective Go", "https://go.dev/doc/effective_go"}}
	if !slices.Equal(res.Sources, wantSources) {
		t.Errorf("sources = %+v, want %+v", res.Sources, wantSources)
	}
	// No document was read: every cited claim is unread; "See e.g. the
	// memory model for more." holds no number, name or five content words,
	// so it is no claim ("e.g." is no name).
	if want := (Counts{Claims: 5, Unread: 5}); res.Counts != want {
		t.Errorf("counts = %+v, want %+v", res.Counts, want)
	}
}

// TestUncitedNotFactual checks that a sentence with no marker and nothing
// factual is no claim at all.
func TestUncitedNotFactual(t *testing.T) {
	res := Check("Here is what I found.\n\nThe compiler emits 3 instructions.\n", nil)
	if len(res.Claims) != 1 || res.Claims[0].Text != "The compiler emits 3 instructions." || res.Counts.Uncited != 1 {
		t.Fatalf("claims = %+v, want only the sentence with a number, uncited", res.Claims)
	}
}

// memDoc is a short page for the verdict tests.
var memDoc = Document{Refs: []string{"https://go.dev/ref/mem", "https://go.dev/ref/mem?x=1"}, Title: "The Go Memory Model", Read: true,
	Text: "Introduction\n\nThe Go memory model specifies the conditions under which reads of a variable in one goroutine " +
		"can be guaranteed to observe values produced by writes to the same variable in a different goroutine.\n\n" +
		"The following formal definition closely follows the approach presented by Hans-J. Boehm and Sarita V. Adve " +
		"in “Foundations of the C++ Concurrency Memory Model”, published in PLDI 2008.\n\n" +
		"The sync package implements two lock data types, sync.Mutex and sync.RWMutex.\n\n" +
		"A buffered channel with capacity C holds at most C values; unbuffered channels hold none. Programs use them for many things."}

// TestVerdicts checks each verdict on a small page.
func TestVerdicts(t *testing.T) {
	shown := Document{Refs: []string{"https://pkg.go.dev/sync"}, Title: "sync package"}
	failed := Document{Refs: []string{"https://example.com/down"}, Read: true}
	cases := []struct {
		claim, ref string
		want       Verdict
		reason     string
	}{
		{"The approach was published in PLDI 2008 by Boehm and Adve.", "https://go.dev/ref/mem", Supported, ""},
		{"The approach was published in PLDI 2009 by Boehm and Adve.", "https://go.dev/ref/mem", Unsupported, `number "2009"`},
		{"The approach was published in PLDI 2008 by Boehm and Lamport.", "https://go.dev/ref/mem", Unsupported, `name "lamport"`},
		{"The sync package has `sync.Mutex` and `sync.Once`.", "https://go.dev/ref/mem", Unsupported, `code "sync.Once"`},
		{`The model is described in "Foundations of Concurrency".`, "https://go.dev/ref/mem", Unsupported, `quote "foundations of concurrency"`},
		{`It follows "Foundations of the C++ Concurrency Memory Model" closely.`, "https://go.dev/ref/mem", Supported, ""},
		{"Programs use channels for scheduling, tracing, profiling and logging.", "https://go.dev/ref/mem", Weak, "only"},
		{"Goroutines are cheap to create and scheduled cooperatively by the runtime.", "https://go.dev/ref/mem", Unsupported, "only"},
		{"The sync package implements two lock data types.", "HTTPS://WWW.Go.dev/ref/mem/#sync", Supported, ""},
		{"The sync package implements two lock data types.", "https://go.dev/ref/mem?x=1", Supported, ""},
		{"Package sync has locks.", "https://pkg.go.dev/sync", Unread, "snippet"},
		{"Package sync has locks.", "https://go.dev/invented", Unread, "never read"},
		{"Package sync has locks.", "https://example.com/down", Unread, "no text"},
	}
	for _, c := range cases {
		report := c.claim + " [1]\n\n## Sources\n[1] x — " + c.ref + "\n"
		res := Check(report, []Document{memDoc, shown, failed})
		if len(res.Pairs) != 1 {
			t.Fatalf("%q: %d pairs, want 1", c.claim, len(res.Pairs))
		}
		p := res.Pairs[0]
		if p.Verdict != c.want || !strings.Contains(p.Reason, c.reason) {
			t.Errorf("%q cited to %s: %s (%q, score %.2f, passage %q), want %s with %q", c.claim, c.ref, p.Verdict,
				p.Reason, p.Score, p.Passage, c.want, c.reason)
		}
	}
}

// TestClaimVerdictIsBestPair checks that one supporting source makes a
// claim supported, and that a marker with no source entry is unread.
func TestClaimVerdictIsBestPair(t *testing.T) {
	report := "The sync package implements two lock data types [1, 2].\n\nIt has a third one [3].\n\n## Sources\n" +
		"[1] invented — https://example.com/nothing\n[2] mem — https://go.dev/ref/mem\n"
	res := Check(report, []Document{memDoc})
	if res.Claims[0].Verdict != Supported || len(res.Pairs) != 3 || res.Pairs[0].Verdict != Unread {
		t.Fatalf("claims %+v pairs %+v, want the first claim supported through [2]", res.Claims, res.Pairs)
	}
	if p := res.Pairs[2]; p.Verdict != Unread || !strings.Contains(p.Reason, "no source [3]") {
		t.Errorf("pair of a marker with no entry = %+v, want unread", p)
	}
}

// TestFlag checks that flagged claims get their mark once, after their
// markers, and that flagging twice changes nothing.
func TestFlag(t *testing.T) {
	report := "- The approach was published in PLDI 2009 [1]\n- The sync package implements two lock data types [1].\n" +
		"- Something from nowhere [2].\n\n## Sources\n[1] mem — https://go.dev/ref/mem\n[2] x — https://example.com/x\n"
	res := Check(report, []Document{memDoc})
	got := Flag(report, res)
	want := "- The approach was published in PLDI 2009 [1] ⚠ unsupported\n- The sync package implements two lock data types [1].\n" +
		"- Something from nowhere [2]. ⚠ unread\n\n## Sources\n[1] mem — https://go.dev/ref/mem\n[2] x — https://example.com/x\n"
	if got != want {
		t.Fatalf("flagged report:\n%s\nwant:\n%s", got, want)
	}
	again := Check(got, []Document{memDoc})
	if again.Counts != res.Counts {
		t.Errorf("counts of the flagged report = %+v, want %+v", again.Counts, res.Counts)
	}
	if twice := Flag(got, again); twice != got {
		t.Errorf("flagging twice gave:\n%s", twice)
	}
}

// TestStem: the forms of a word share its stem, and words that differ do
// not.
func TestStem(t *testing.T) {
	for _, forms := range [][]string{{"library", "libraries"}, {"run", "running", "runs"}, {"stop", "stopped", "stops"},
		{"box", "boxes"}, {"make", "makes", "making"}, {"carry", "carries", "carried"}, {"class", "classes"},
		{"status", "statuses"}, {"go", "go's"}, {"cancel", "cancels", "cancelled", "canceled"}} {
		for _, f := range forms[1:] {
			if stem(f) != stem(forms[0]) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q; want one stem", f, stem(f), forms[0], stem(forms[0]))
			}
		}
	}
	for _, pair := range [][2]string{{"context", "content"}, {"timeout", "time"}, {"reader", "read"}} {
		if stem(pair[0]) == stem(pair[1]) {
			t.Errorf("stem(%q) = stem(%q) = %q; want them apart", pair[0], pair[1], stem(pair[0]))
		}
	}
}

// TestDeterministic checks that the same input gives the same result.
func TestDeterministic(t *testing.T) {
	report := "A send on a channel is synchronized [1]. Buffered channels hold C values [1].\n\n## Sources\n[1] m — https://go.dev/ref/mem\n"
	a, b := Check(report, []Document{memDoc}), Check(report, []Document{memDoc})
	if !reflect.DeepEqual(a.Pairs, b.Pairs) || !slices.Equal(a.Claims[0].Markers, b.Claims[0].Markers) {
		t.Fatalf("two checks differ: %+v and %+v", a.Pairs, b.Pairs)
	}
}
