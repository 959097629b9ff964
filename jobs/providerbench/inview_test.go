package providerbench_test

import (
	"context"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/cite"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// inView runs a research whose writer quotes only what is in its prompt.
func inView(t testing.TB, steps, window, perStep int) providerbench.LongResult {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := providerbench.LongResearch(ctx, providerbench.LongOptions{
		EnvOptions: providerbench.EnvOptions{Pool: dbtest.NewPool(t)},
		Steps:      steps, Window: window, QuoteInView: true, PagesPerStep: perStep})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Citations
	if r.Status != "succeeded" || c == nil || cited(c) == 0 {
		t.Fatalf("%s after %d steps (%s); citations %+v", r.Status, r.Steps, r.Error, c)
	}
	t.Logf("%d steps at a %d window, %d pages a step: %d of %d cited claims supported (%+v); "+
		"results stubbed before they were seen %d, come back whole after a stub %d; steps of several results all seen whole %d of %d",
		steps, window, perStep, c.Supported, cited(c), *c, r.Seen.UnseenStubbed, r.Seen.Returned,
		r.Seen.AllWhole, r.Seen.Several)
	return r
}

// checkInView checks what matters of such a research: at least 90% of its
// cited claims supported, no result stubbed before the model saw it, none
// whole again after a stub, and, when whole is true, every step of several
// results seen whole (a window too small for them cuts them to their head).
func checkInView(t testing.TB, r providerbench.LongResult, whole bool) {
	c := r.Citations
	if 10*c.Supported < 9*cited(c) {
		t.Errorf("%d of %d cited claims supported; want at least 90%%", c.Supported, cited(c))
	}
	if r.Seen.UnseenStubbed != 0 || r.Seen.Returned != 0 || (whole && r.Seen.AllWhole != r.Seen.Several) {
		t.Errorf("%d results stubbed before they were seen, %d whole again after a stub, %d of %d steps of several results seen whole",
			r.Seen.UnseenStubbed, r.Seen.Returned, r.Seen.AllWhole, r.Seen.Several)
	}
}

// cited is the number of a report's claims that cite a source.
func cited(c *cite.Counts) int {
	return c.Supported + c.Weak + c.Unsupported + c.Unread + c.Contradicted
}

// A research whose steps fetch two pages each, at a window that holds a
// few: the request after each step holds both its pages whole, and its
// writer, quoting only what is in its prompt, still has its claims
// supported at the report. At a window that barely holds two pages, none
// is stubbed before it was seen (they are cut to their head), and the
// claims are still supported.
func TestTwoPagesSeenWhole(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		window int
		whole  bool
	}{{32_000, true}, {20_000, false}} {
		r := inView(t, 12, c.window, 2)
		checkInView(t, r, c.whole)
		if r.Seen.Several < 10 {
			t.Errorf("window %d: only %d requests followed a step of two pages", c.window, r.Seen.Several)
		}
	}
}

// BenchmarkLongResearchInView runs the 40-step research at a 128k window
// with a writer that quotes only what is in its prompt, and reports its
// cited claims and those supported.
func BenchmarkLongResearchInView(b *testing.B) {
	for b.Loop() {
		r := inView(b, 40, 128_000, 1)
		b.ReportMetric(float64(r.Citations.Supported), "supported")
		b.ReportMetric(float64(cited(r.Citations)), "cited")
		b.ReportMetric(float64(r.Seen.Returned), "returned")
	}
}

// A 40-step research at a 128k window whose writer quotes only what is in
// its prompt has at least 90% of its cited claims supported, no result
// stubbed before it was seen and none whole again after a stub.
func TestLongResearchInView(t *testing.T) {
	t.Parallel()
	checkInView(t, inView(t, 40, 128_000, 1), true)
}
