package providerbench_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// A recorded tree forked at two steps of its root, against the fake
// provider. At step 3, after the root read its sub-agents' reports, with
// another model and a budget: the sub-agents are copied as recorded, only
// the root's last two steps call the provider, and the first of them
// sends what the original sent at that step byte for byte, but for the
// model. At step 2, where the root parked on its wait, with an
// instruction: the sub-agents, whose reports the root had not read, run
// anew as they ran before, and the root's first live request begins with
// the original's replayed conversation and ends with the instruction. In
// both, the ledger holds the live calls only, each as the provider billed
// it, and the replayed steps cost nothing.
func TestForkReplaysTheRecordAndGoesOnLive(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool := dbtest.NewPool(t)
	const instruction = "Weigh the second part more than the first."
	r, err := providerbench.ForkTree(ctx, providerbench.EnvOptions{Pool: pool, Workers: 2}, []jobs.ForkParams{
		{Step: 3, Model: providerbench.ForkModel, MaxCostUSD: 0.5},
		{Step: 2, Instruction: instruction},
	})
	if err != nil {
		t.Fatal(err)
	}
	o := r.Original
	root := o.Requests["tides of the harbour, in parts"]
	if o.Root.Status != jobs.StatusSucceeded || o.Root.Steps != 5 || len(root) != 5 || len(o.Runs) != 2 || o.Replayed != 0 {
		t.Fatalf("original: root %s after %d steps (%d requests), sub-agents %v, %d replayed steps",
			o.Root.Status, o.Root.Steps, len(root), o.Runs, o.Replayed)
	}
	for i, f := range r.Forks {
		t.Logf("fork %d (step %d): %s, $%.6f (original $%.6f), %d calls, %d replayed steps, sub-agents %v",
			i, *f.Root.ForkStep, f.Root.Status, f.Root.CostUSD, o.Root.CostUSD, len(f.Calls), f.Replayed, f.Runs)
		if f.Root.Status != jobs.StatusSucceeded || f.Root.ForkedFrom == nil || *f.Root.ForkedFrom != o.Root.ID {
			t.Errorf("fork %d: %s (%s), forked from %v", i, f.Root.Status, f.Root.Error, f.Root.ForkedFrom)
		}
		if !slices.Equal(f.Runs, []string{"part1 succeeded", "part2 succeeded"}) {
			t.Errorf("fork %d: sub-agents %v", i, f.Runs)
		}
		checkForkLedger(t, i, f)
	}

	a := r.Forks[0]
	live := a.Requests["tides of the harbour, in parts"]
	if len(a.Requests) != 1 || len(live) != 2 || a.Replayed != 3+2*2 || a.Root.Steps != 5 {
		t.Fatalf("fork at step 3: %d agents called, %d root requests, %d steps replayed, %d steps", len(a.Requests),
			len(live), a.Replayed, a.Root.Steps)
	}
	if why := sameRequest(root[3], live[0]); why != "" {
		t.Errorf("fork at step 3: its first live request is not the original's step 4: %s", why)
	}
	if live[0].Model != providerbench.ForkModel || a.Root.MaxCostUSD == nil || *a.Root.MaxCostUSD != 0.5 {
		t.Errorf("fork at step 3: asked %s with budget %v", live[0].Model, a.Root.MaxCostUSD)
	}

	b := r.Forks[1]
	for _, part := range []string{"part 1", "part 2"} {
		orig, again := requestsOf(o, part), requestsOf(b, part)
		if len(orig) != 2 || len(again) != 2 {
			t.Fatalf("fork at step 2: %s made %d requests, %d in the original", part, len(again), len(orig))
		}
		for k := range orig {
			if why := sameRequest(orig[k], again[k]); why != "" {
				t.Errorf("fork at step 2: %s request %d differs from the original's: %s", part, k+1, why)
			}
		}
	}
	resumed := b.Requests["tides of the harbour, in parts"]
	if len(resumed) != 3 || b.Replayed != 2 {
		t.Fatalf("fork at step 2: %d root requests, %d steps replayed", len(resumed), b.Replayed)
	}
	prefix := len(root[1].Messages) + 1 // step 2's request and its wait call
	if len(resumed[0].Messages) < prefix+2 {
		t.Fatalf("fork at step 2: its first live request has %d messages", len(resumed[0].Messages))
	}
	for i, m := range root[2].Messages[:prefix] {
		if g := resumed[0].Messages[i]; !sameMessage(g, m) {
			t.Errorf("fork at step 2: replayed message %d (%s) differs from the original's", i, m.Role)
		}
	}
	if last := resumed[0].Messages[len(resumed[0].Messages)-1]; last.Role != "user" || !strings.HasSuffix(last.Content, instruction) {
		t.Errorf("fork at step 2: its first live request ends with %s %.80q, not the instruction", last.Role, last.Content)
	}
}

// requestsOf is what the agent of a task made in a tree, found by the
// task's beginning.
func requestsOf(f providerbench.ForkRun, prefix string) []openaifake.Request {
	for t, reqs := range f.Requests {
		if strings.HasPrefix(t, prefix) {
			return reqs
		}
	}
	return nil
}

// sameRequest says where two requests' messages and tools differ ("" when
// they do not).
func sameRequest(want, got openaifake.Request) string {
	if len(got.Messages) != len(want.Messages) {
		return "it has " + strconv.Itoa(len(got.Messages)) + " messages, not " + strconv.Itoa(len(want.Messages))
	}
	for i, m := range want.Messages {
		if !sameMessage(got.Messages[i], m) {
			return "message " + strconv.Itoa(i) + " (" + m.Role + ") differs"
		}
	}
	if !slices.EqualFunc(got.Tools, want.Tools, func(a, b openaifake.Tool) bool {
		return a.Name == b.Name && a.Description == b.Description && string(a.Parameters) == string(b.Parameters)
	}) {
		return "its tools differ"
	}
	return ""
}

// sameMessage reports whether two messages are the same, byte for byte.
func sameMessage(a, b openaifake.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.Name == b.Name && a.ToolCallID == b.ToolCallID &&
		slices.Equal(a.ToolCalls, b.ToolCalls)
}

// checkForkLedger fails the test unless a fork's ledger holds exactly its
// live calls, as the provider billed them, and its run's cost is theirs.
func checkForkLedger(t *testing.T, i int, f providerbench.ForkRun) {
	t.Helper()
	for _, m := range f.Ledger.Mismatches {
		t.Errorf("fork %d ledger: %s", i, m)
	}
	if f.Ledger.Billed != len(f.Calls) || f.Ledger.Open != 0 || f.Ledger.Estimated != 0 {
		t.Errorf("fork %d ledger: %d billed, %d open, %d at an estimate; the provider billed %d", i,
			f.Ledger.Billed, f.Ledger.Open, f.Ledger.Estimated, len(f.Calls))
	}
	var billed float64
	for _, c := range f.Calls {
		billed += c.CostUSD
	}
	if diff := f.Ledger.RunCostUSD - billed; diff > 1e-8 || diff < -1e-8 {
		t.Errorf("fork %d: its runs cost $%.10f; the provider billed $%.10f", i, f.Ledger.RunCostUSD, billed)
	}
}
