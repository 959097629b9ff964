package providerbench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
)

// TeamResult is what a team tree did and cost on one provider.
type TeamResult struct {
	Provider, Model       string
	RootStatus, RootError string
	Report                string
	// Runs are the sub-agents' "name status error".
	Runs []string
	// Events are the tree's events, each agent's in its order, as
	// "agent kind detail" (a tool's name and whether it failed, a step's
	// tools): what a provider changes nothing of.
	Events []string
	// CostUSD and the tokens are the provider's bill; CacheWriteTokens is
	// what it wrote to its cache (Bedrock only).
	CostUSD                            float64
	PromptTokens, CachedTokens         int
	CacheWriteTokens, CompletionTokens int
	Stats                              openaifake.Stats
	Ledger                             Ledger
}

// TeamTree runs one tree that uses the team's tools: the root spawns a
// reader and a writer and waits for them; the reader searches the web,
// fetches the first page found and sends its address to its sibling the
// writer; the writer waits for that message; each reports, citing the
// pages it knows.
func TeamTree(ctx context.Context, o EnvOptions) (TeamResult, error) {
	o.team = true
	e, err := newEnv(ctx, o, 2000, teamBrain)
	if err != nil {
		return TeamResult{}, err
	}
	defer e.Close()
	run, err := e.Start(ctx, jobs.StartParams{Topic: "tides of the harbour", MaxSteps: 6})
	if err != nil {
		return TeamResult{}, err
	}
	if err := e.Wait(ctx, run.ID); err != nil {
		return TeamResult{}, err
	}
	r := TeamResult{Provider: o.ProviderName, Model: e.Model, Stats: e.Stats(), CacheWriteTokens: e.CacheWriteTokens()}
	if r.Provider == "" {
		r.Provider = ProviderOpenAI
	}
	r.CostUSD, r.PromptTokens, r.CachedTokens, r.CompletionTokens = r.Stats.CostUSD, r.Stats.PromptTokens,
		r.Stats.CachedTokens, r.Stats.CompletionTokens
	tree, err := jobs.Tree(ctx, e.Pool, run.ID)
	if err != nil {
		return r, err
	}
	for _, t := range tree {
		if t.ID == run.ID {
			r.RootStatus, r.RootError, r.Report = t.Status, t.Error, t.Report
			continue
		}
		r.Runs = append(r.Runs, fmt.Sprintf("%s %s %s", t.Name, t.Status, t.Error))
	}
	slices.Sort(r.Runs)
	if r.Events, err = eventLines(ctx, e, run.ID); err != nil {
		return r, err
	}
	r.Ledger, err = ReadLedger(ctx, e.Pool, []int64{run.ID}, e.Calls())
	return r, err
}

// eventLines are a tree's events grouped by agent (agents by name), each
// agent's in order, without what differs between providers (times, ids,
// token counts).
func eventLines(ctx context.Context, e *Env, root int64) ([]string, error) {
	evs, err := jobs.Events(ctx, e.Pool, root, 0, 10_000)
	if err != nil {
		return nil, err
	}
	by := map[string][]string{}
	for _, ev := range evs {
		var d struct {
			Tool   string   `json:"tool"`
			Tools  []string `json:"tools"`
			Failed []string `json:"failed"`
			Error  *bool    `json:"error"`
			Step   *int     `json:"step"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		line := ev.Kind
		if d.Step != nil {
			line += fmt.Sprintf(" step %d", *d.Step)
		}
		if d.Tool != "" {
			line += " " + d.Tool
		}
		if len(d.Tools) > 0 {
			line += " [" + strings.Join(d.Tools, ",") + "]"
		}
		if d.Error != nil && *d.Error {
			line += " failed"
		}
		if len(d.Failed) > 0 {
			line += " failed [" + strings.Join(d.Failed, ",") + "]"
		}
		by[ev.Agent] = append(by[ev.Agent], line)
	}
	var out []string
	for _, agent := range slices.Sorted(maps.Keys(by)) {
		for _, l := range by[agent] {
			out = append(out, agent+": "+l)
		}
	}
	return out, nil
}

// teamBrain plays the team of TeamTree.
func teamBrain(p *pages) openaifake.Brain {
	return func(req *openaifake.Request) openaifake.Answer {
		t, k := task(req), turns(req)
		call := func(name, args string) openaifake.Answer {
			return openaifake.Answer{ToolCalls: []openaifake.ToolCall{{ID: fmt.Sprintf("call_%s_%d", name, k+1),
				Name: name, Arguments: args}}}
		}
		switch {
		case !mayCall(req):
			return report(req, t)
		case strings.HasPrefix(t, "Read "):
			switch k {
			case 0:
				return call("web_search", `{"query":"harbour tides"}`)
			case 1:
				if u := firstPage(req); u != "" {
					return call("fetch", fmt.Sprintf(`{"url":%q}`, u))
				}
			case 2:
				return call("send_message", fmt.Sprintf(`{"to":"writer","text":"The tide page: %s"}`, firstPage(req)))
			}
			return report(req, t)
		case strings.HasPrefix(t, "Write "):
			if k < 3 && firstPage(req) == "" {
				return call("read_messages", `{"wait_seconds":30}`)
			}
			return report(req, t)
		case k == 0 && offers(req, "spawn_subagent"):
			return openaifake.Answer{ToolCalls: []openaifake.ToolCall{
				{ID: "call_spawn_reader", Name: "spawn_subagent", Arguments: `{"name":"reader","reason":"someone must read the page",` +
					`"task":"Read the tide page you find and send its address to the writer.","max_steps":5}`},
				{ID: "call_spawn_writer", Name: "spawn_subagent", Arguments: `{"name":"writer","reason":"someone must write it up",` +
					`"task":"Write up the page the reader sends you.","max_steps":5}`}}}
		case k == 1 && offers(req, "wait_subagents"):
			return call("wait_subagents", `{}`)
		}
		return report(req, t)
	}
}

// firstPage is the first page address the request mentions.
func firstPage(req *openaifake.Request) string {
	for _, m := range req.Messages {
		if u := pageURL.FindString(m.Content); u != "" {
			return u
		}
	}
	return ""
}
