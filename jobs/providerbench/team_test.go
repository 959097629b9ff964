package providerbench_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/bedrock"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// The same tree (spawn, wait, a web search and a fetch, a message between
// siblings) on the OpenAI-compatible fake and on the Converse fake, each
// through its real client: the same events, every run succeeds, and each
// provider's bill is what its prices give for its tokens, matched call by
// call by gb's ledger.
func TestTheSameTreeOnBothProviders(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool := dbtest.NewPool(t)
	var results []providerbench.TeamResult
	for _, p := range []string{providerbench.ProviderOpenAI, providerbench.ProviderBedrock} {
		r, err := providerbench.TeamTree(ctx, providerbench.EnvOptions{Pool: pool, ProviderName: p})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		t.Logf("%s (%s): root %s; sub-agents %v; %d calls, %d prompt tokens (%d read from the cache, %d written to it), "+
			"%d completion tokens: $%.6f", r.Provider, r.Model, r.RootStatus, r.Runs, r.Stats.Billed, r.PromptTokens,
			r.CachedTokens, r.CacheWriteTokens, r.CompletionTokens, r.CostUSD)
		if r.RootStatus != "succeeded" || len(r.Runs) != 2 || !strings.Contains(r.Report, "/page/1") || !strings.Contains(r.Report, "[2]") {
			t.Errorf("%s: root %s %q, sub-agents %v, report %q", p, r.RootStatus, r.RootError, r.Runs, r.Report)
		}
		for _, run := range r.Runs {
			if !strings.Contains(run, " succeeded") {
				t.Errorf("%s: sub-agent %s", p, run)
			}
		}
		checkLedger(t, r.Stats, r.Ledger)
		results = append(results, r)
	}
	o, b := results[0], results[1]
	// Whether the writer's read found the reader's message at once or
	// parked for it depends on which of the two steps ran first, not on
	// the provider.
	parking := func(e string) bool { return e == "writer: waiting" || e == "writer: resumed" }
	if !slices.Equal(slices.DeleteFunc(slices.Clone(o.Events), parking), slices.DeleteFunc(slices.Clone(b.Events), parking)) {
		t.Errorf("the events differ:\nopenai:\n  %s\nbedrock:\n  %s", strings.Join(o.Events, "\n  "), strings.Join(b.Events, "\n  "))
	}
	// A step's event lists its tools.
	for _, want := range []string{"reader: step step 1 [web_search]", "reader: step step 2 [fetch]", "reader: step step 3 [send_message]",
		"writer: step step 1 [read_messages]", "writer: completed", "root: step step 1 [spawn_subagent,spawn_subagent]",
		"root: step step 2 [wait_subagents]"} {
		if !slices.Contains(o.Events, want) {
			t.Errorf("no event %q in\n  %s", want, strings.Join(o.Events, "\n  "))
		}
	}
	if slices.Contains(o.Events, "writer: step step 3") {
		t.Errorf("the writer did not get the reader's message at its first read:\n  %s", strings.Join(o.Events, "\n  "))
	}
	// Each bill is its provider's prices applied to its own tokens.
	op, _ := openai.PriceOf(providerbench.ModelDefault)
	bp, _ := bedrock.PriceOf(providerbench.BedrockModelDefault)
	for _, c := range []struct {
		r providerbench.TeamResult
		p llm.Price
	}{{o, op}, {b, bp}} {
		u := llm.Usage{PromptTokens: c.r.PromptTokens, CachedPromptTokens: c.r.CachedTokens,
			CacheWriteTokens: c.r.CacheWriteTokens, CompletionTokens: c.r.CompletionTokens}
		if want := c.p.Cost(u); math.Abs(c.r.CostUSD-want) > 1e-9 || want == 0 {
			t.Errorf("%s: billed $%.8f, its prices give $%.8f", c.r.Provider, c.r.CostUSD, want)
		}
	}
	if b.CacheWriteTokens == 0 {
		t.Errorf("bedrock wrote nothing to its cache: %+v", b.Stats)
	}
}
