package providerbench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
)

// ReplayResult is what ReplayTree saw of the requests the provider got.
type ReplayResult struct {
	RootStatus string
	// Runs are the sub-agents' "name status".
	Runs []string
	// Requests counts the requests, Agents the agents that sent them.
	Requests, Agents int
	// Breaks says, for each request of an agent that did not begin with
	// its previous request and the answer to it byte for byte, where the
	// two first differ.
	Breaks []string
	// PromptTokens and CachedTokens are the provider's bill: CachedTokens
	// of the prompt tokens were read from its prompt cache.
	PromptTokens, CachedTokens int
	// LaterPromptTokens and LaterCachedTokens are the same for the
	// requests after each agent's first, whose prefix the provider saw.
	LaterPromptTokens, LaterCachedTokens int
	Stats                                openaifake.Stats
	Ledger                               Ledger
}

// CachedShare is the share of the prompt tokens read from the cache.
func (r ReplayResult) CachedShare() float64 {
	if r.PromptTokens == 0 {
		return 0
	}
	return float64(r.CachedTokens) / float64(r.PromptTokens)
}

// LaterCachedShare is the share of the prompt tokens of the requests after
// each agent's first read from the cache.
func (r ReplayResult) LaterCachedShare() float64 {
	if r.LaterPromptTokens == 0 {
		return 0
	}
	return float64(r.LaterCachedTokens) / float64(r.LaterPromptTokens)
}

// Arguments written the way models write them, which a store that parses
// them would not give back as they came: keys out of order, whitespace,
// escapes (escaped slashes, \u escapes of <, > and &).
const (
	oddSpawn = "{ \"task\" : \"part %d: read the tide pages \\u0026 summarise\",\n  \"name\":\"part%d\", " +
		"\"reason\": \"part %d needs pages of its own \\u003cits own\\u003e\", \"max_steps\": %d }"
	oddFetch = "{\"offset\" : 0,\n  \"url\":\t\"%s\"}"
	oddWait  = "{ }"
	oddRead  = "{\"wait_seconds\":3 }"
)

// ReplayTree runs one tree that hands its runs over in every way a run
// is handed over: the root spawns subs sub-agents with odd arguments (its
// job ends), waits for them (it parks) and resumes in a new job; each
// sub-agent fetches two pages in a row in one job, waits for messages
// that do not come (it parks, and a wake job resumes it), fetches again
// and reports. Workers take turns (EnvOptions.Workers), and a short
// EnvOptions.Agent.Slice hands runs over to new jobs between steps too.
// It records every request and reports where a request of an agent does
// not begin with the request before it and its answer, byte for byte,
// and the share of prompt tokens the provider's cache served.
func ReplayTree(ctx context.Context, o EnvOptions, subs int) (ReplayResult, error) {
	o.team = true
	var mu sync.Mutex
	seen := map[string][]replayed{}
	brain := func(p *pages) openaifake.Brain {
		return func(req *openaifake.Request) openaifake.Answer {
			a := replayBrain(p, req, subs)
			mu.Lock()
			defer mu.Unlock()
			t := task(req)
			seen[t] = append(seen[t], replayed{req: slices.Clone(req.Messages), answer: a, id: req.ClientRequestID})
			return a
		}
	}
	e, err := newEnv(ctx, o, 2000, brain)
	if err != nil {
		return ReplayResult{}, err
	}
	defer e.Close()
	run, err := e.Start(ctx, jobs.StartParams{Topic: "tides of the harbour, in parts", MaxSteps: 6})
	if err != nil {
		return ReplayResult{}, err
	}
	if err := e.Wait(ctx, run.ID); err != nil {
		return ReplayResult{}, err
	}
	r := ReplayResult{Stats: e.Stats()}
	r.PromptTokens, r.CachedTokens = r.Stats.PromptTokens, r.Stats.CachedTokens
	tree, err := jobs.Tree(ctx, e.Pool, run.ID)
	if err != nil {
		return r, err
	}
	for _, t := range tree {
		if t.ID == run.ID {
			r.RootStatus = t.Status
			continue
		}
		r.Runs = append(r.Runs, t.Name+" "+t.Status)
	}
	slices.Sort(r.Runs)
	billed := map[string]openaifake.Call{}
	for _, c := range e.Calls() {
		billed[c.ClientRequestID] = c
	}
	mu.Lock()
	for agent, reqs := range seen {
		for _, q := range reqs[1:] {
			r.LaterPromptTokens += billed[q.id].PromptTokens
			r.LaterCachedTokens += billed[q.id].CachedTokens
		}
		r.Agents++
		r.Requests += len(reqs)
		for i := 1; i < len(reqs); i++ {
			if why := replayBreak(reqs[i-1], reqs[i].req); why != "" {
				r.Breaks = append(r.Breaks, fmt.Sprintf("%.40q request %d: %s", agent, i+1, why))
			}
		}
	}
	mu.Unlock()
	slices.Sort(r.Breaks)
	r.Ledger, err = ReadLedger(ctx, e.Pool, []int64{run.ID}, e.Calls())
	return r, err
}

// replayed is one request of an agent as the provider decoded it, and
// the answer it got.
type replayed struct {
	req    []openaifake.Message
	answer openaifake.Answer
	id     string // the caller's name for the call
}

// replayBreak says where next does not begin with prev's messages and the
// assistant message of prev's answer, exactly ("" when it does).
func replayBreak(prev replayed, next []openaifake.Message) string {
	want := append(slices.Clone(prev.req), openaifake.Message{Role: "assistant", Content: prev.answer.Content,
		ToolCalls: prev.answer.ToolCalls})
	if len(next) < len(want) {
		return fmt.Sprintf("%d messages, fewer than the %d before it and its answer", len(next), len(want))
	}
	for i, w := range want {
		if g := next[i]; !sameMessage(g, w) {
			return fmt.Sprintf("message %d (%s) differs: got %s, want %s", i, w.Role, brief(g), brief(w))
		}
	}
	return ""
}

// sameMessage reports whether two messages are the same, byte for byte.
func sameMessage(a, b openaifake.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.Name == b.Name && a.ToolCallID == b.ToolCallID &&
		slices.Equal(a.ToolCalls, b.ToolCalls)
}

// brief is a message's tool calls, or the head of its text.
func brief(m openaifake.Message) string {
	if len(m.ToolCalls) > 0 {
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, fmt.Sprintf("%s %s(%q)", c.ID, c.Name, c.Arguments))
		}
		return strings.Join(calls, ", ")
	}
	return fmt.Sprintf("%.80q", m.Content)
}

// replayBrain plays ReplayTree's agents.
func replayBrain(p *pages, req *openaifake.Request, subs int) openaifake.Answer {
	t, k := task(req), turns(req)
	switch {
	case !mayCall(req):
		return report(req, t)
	case strings.HasPrefix(t, "part "):
		var part int
		fmt.Sscanf(t, "part %d", &part)
		url := strings.ReplaceAll(p.URL(part*100+k+1), "/", `\/`)
		switch k {
		case 0, 1, 3:
			return call(fmt.Sprintf("call_part_%d", k+1), "fetch", fmt.Sprintf(oddFetch, url))
		case 2:
			return call("call_part_3", "read_messages", oddRead)
		}
		return report(req, t)
	case k == 0 && offers(req, "spawn_subagent"):
		var a openaifake.Answer
		for i := 1; i <= subs; i++ {
			a.ToolCalls = append(a.ToolCalls, openaifake.ToolCall{ID: fmt.Sprintf("call_spawn_%d", i),
				Name: "spawn_subagent", Arguments: fmt.Sprintf(oddSpawn, i, i, i, 6)})
		}
		return a
	case k == 1 && offers(req, "wait_subagents"):
		return call("call_wait", "wait_subagents", oddWait)
	default:
		return report(req, t)
	}
}
