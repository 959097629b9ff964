package providerbench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
)

// ForkModel is the other model a fork of ForkTree may be given.
const ForkModel = "gpt-4.1-mini"

// ForkRun is one tree of ForkTree: its root as it ended, its sub-agents'
// "name status", the requests the provider got for it by agent (task),
// the calls it billed and the ledger of the tree.
type ForkRun struct {
	Root     *jobs.Run
	Runs     []string
	Requests map[string][]openaifake.Request
	Calls    []openaifake.Call
	Ledger   Ledger
	// Replayed counts the tree's steps marked replayed.
	Replayed int
}

// ForkResult is a recorded tree and its forks.
type ForkResult struct {
	Original ForkRun
	Forks    []ForkRun
}

// ForkTree records a tree, then forks it as forks say (their UserID and
// ID are filled), one at a time, each run to its end. The tree's root
// spawns two sub-agents (step 1), waits for them (step 2, parked), reads
// their reports as it resumes and fetches a page (step 3), fetches
// another (step 4) and reports (step 5); each sub-agent fetches a page and
// reports. The agents answer the same conversation the same way, so a
// fork's live steps are the original's unless the fork changed them.
func ForkTree(ctx context.Context, o EnvOptions, forks []jobs.ForkParams) (ForkResult, error) {
	o.team = true
	if o.Profiles == nil {
		o.Profiles = map[string]openai.ProfileOverride{}
	}
	var mu sync.Mutex
	var seen map[string][]openaifake.Request
	brain := func(p *pages) openaifake.Brain {
		return func(req *openaifake.Request) openaifake.Answer {
			mu.Lock()
			defer mu.Unlock()
			r := *req
			r.Messages = slices.Clone(req.Messages)
			seen[task(req)] = append(seen[task(req)], r)
			return forkBrain(p, req)
		}
	}
	o.otherModels = append(o.otherModels, ForkModel)
	e, err := newEnv(ctx, o, 2000, brain)
	if err != nil {
		return ForkResult{}, err
	}
	defer e.Close()
	record := func(start func() (*jobs.Run, error)) (ForkRun, error) {
		mu.Lock()
		seen = map[string][]openaifake.Request{}
		before := len(e.Calls())
		mu.Unlock()
		run, err := start()
		if err != nil {
			return ForkRun{}, err
		}
		if err := e.Wait(ctx, run.ID); err != nil {
			return ForkRun{}, err
		}
		mu.Lock()
		fr := ForkRun{Requests: seen}
		mu.Unlock()
		fr.Calls = e.Calls()[before:]
		return fr, e.readForkRun(ctx, run.ID, &fr)
	}
	var r ForkResult
	if r.Original, err = record(func() (*jobs.Run, error) {
		return e.Start(ctx, jobs.StartParams{Topic: "tides of the harbour, in parts", MaxSteps: 8})
	}); err != nil {
		return r, err
	}
	for _, fp := range forks {
		fp.UserID, fp.ID = e.UserID, r.Original.Root.ID
		f, err := record(func() (*jobs.Run, error) { return e.Starter.Fork(ctx, fp) })
		if err != nil {
			return r, fmt.Errorf("fork at step %d: %w", fp.Step, err)
		}
		r.Forks = append(r.Forks, f)
	}
	return r, nil
}

// readForkRun reads a tree's root, sub-agents, replayed steps and ledger.
func (e *Env) readForkRun(ctx context.Context, root int64, fr *ForkRun) error {
	tree, err := jobs.Tree(ctx, e.Pool, root)
	if err != nil {
		return err
	}
	for _, t := range tree {
		if t.ID == root {
			fr.Root = t
			continue
		}
		fr.Runs = append(fr.Runs, t.Name+" "+t.Status)
	}
	slices.Sort(fr.Runs)
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_steps s
		JOIN gb_agent_research_runs r ON r.id = s.run_id WHERE r.root_id = $1 AND s.replayed`, root).Scan(&fr.Replayed); err != nil {
		return fmt.Errorf("error counting replayed steps: %w", err)
	}
	fr.Ledger, err = ReadLedger(ctx, e.Pool, []int64{root}, fr.Calls)
	return err
}

// forkBrain plays ForkTree's agents.
func forkBrain(p *pages, req *openaifake.Request) openaifake.Answer {
	t, k := task(req), turns(req)
	switch {
	case !mayCall(req):
		return report(req, t)
	case strings.HasPrefix(t, "part "):
		var part int
		fmt.Sscanf(t, "part %d", &part)
		if k == 0 {
			return call("call_part_1", "fetch", fmt.Sprintf(oddFetch, p.URL(part*100+1)))
		}
		return report(req, t)
	case k == 0 && offers(req, "spawn_subagent"):
		var a openaifake.Answer
		for i := 1; i <= 2; i++ {
			a.ToolCalls = append(a.ToolCalls, openaifake.ToolCall{ID: fmt.Sprintf("call_spawn_%d", i),
				Name: "spawn_subagent", Arguments: fmt.Sprintf(oddSpawn, i, i, i, 4)})
		}
		return a
	case k == 1:
		return call("call_wait", "wait_subagents", oddWait)
	case k == 2 || k == 3:
		return call(fmt.Sprintf("call_root_%d", k), "fetch", fmt.Sprintf(oddFetch, p.URL(k)))
	default:
		return report(req, t)
	}
}
