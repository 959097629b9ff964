package providerbench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// A tree whose agents spawn, park and resume in new jobs on two workers,
// with arguments written the way models write them: every request of an
// agent begins with its request before and the answer to it, byte for
// byte, so the provider's prompt cache serves the whole of what it saw
// before.
func TestRequestsReplayTheConversationByteForByte(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool := dbtest.NewPool(t)
	r, err := providerbench.ReplayTree(ctx, providerbench.EnvOptions{Pool: pool, Workers: 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("root %s, sub-agents %v: %d requests of %d agents; %d of %d prompt tokens from the cache (%.1f%%), "+
		"%d of %d (%.1f%%) after each agent's first request", r.RootStatus, r.Runs, r.Requests, r.Agents,
		r.CachedTokens, r.PromptTokens, 100*r.CachedShare(), r.LaterCachedTokens, r.LaterPromptTokens,
		100*r.LaterCachedShare())
	if r.RootStatus != "succeeded" || len(r.Runs) != 2 || r.Agents != 3 || r.Requests != 3+2*5 {
		t.Fatalf("root %s, sub-agents %v, %d requests of %d agents", r.RootStatus, r.Runs, r.Requests, r.Agents)
	}
	for _, run := range r.Runs {
		if !strings.HasSuffix(run, " succeeded") {
			t.Errorf("sub-agent %s", run)
		}
	}
	for _, b := range r.Breaks {
		t.Errorf("replay: %s", b)
	}
	checkLedger(t, r.Stats, r.Ledger)
}
