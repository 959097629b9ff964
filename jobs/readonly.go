package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file runs a step's read-only tools (web_search, fetch and the
// knowledge-base search and read) after the model call and before the
// step's transaction: they hold no lock and no connection of the tree's,
// several of one step run at once, and only their results enter the
// commit. One agent's slow fetch never delays its siblings' commits.

// maxConcurrentReads bounds the read-only calls of one step run at once.
const maxConcurrentReads = 4

// readEnv is what a read-only tool sees: the run as the step loaded it.
type readEnv struct {
	agent *Service
	run   *Run
	step  int
}

// readResult is what a read-only tool produced: the text the model reads,
// the sources to record with the step, and the usage of any model call it
// made.
type readResult struct {
	text    string
	sources []Source
	usage   llm.Usage
	failed  bool // the text is a tool error
}

// runReads runs the read-only tool calls of a step concurrently and
// returns their results in the order of the calls (nil for a call that
// runs in the transaction). Tool errors are results; only an
// infrastructure failure (the knowledge base unreachable, say) is
// returned, and fails the step.
func (a *Service) runReads(ctx context.Context, run *Run, step int, calls []llm.ToolCall) ([]*readResult, error) {
	out := make([]*readResult, len(calls))
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	sem := make(chan struct{}, maxConcurrentReads)
	env := &readEnv{agent: a, run: run, step: step}
	for i, call := range calls {
		t, ok := tools[call.Name]
		if (!ok || !a.offers(run, call.Name)) && !slices.Contains(a.placeTools(run), call.Name) {
			out[i] = &readResult{text: a.noSuchTool(run, call.Name), failed: true}
			continue
		}
		if !ok || t.read == nil || !a.offers(run, call.Name) {
			continue // run in the transaction, or refused there
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			tctx, endSpan := a.startTool(ctx, run, step, call)
			res, err := t.read(tctx, env, json.RawMessage(call.ArgumentsText()))
			var te *toolError
			if errors.As(err, &te) {
				res, err = readResult{text: "Error: " + te.msg, failed: true}, nil
			}
			endSpan(res.failed, err)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("tool %s of run %d: %w", call.Name, run.ID, err))
				return
			}
			out[i] = &res
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// readUsage sums the usage of the model calls read-only tools made.
func readUsage(reads []*readResult) llm.Usage {
	var u llm.Usage
	for _, r := range reads {
		if r == nil {
			continue
		}
		u.PromptTokens += r.usage.PromptTokens
		u.CompletionTokens += r.usage.CompletionTokens
		u.CostUSD += r.usage.CostUSD
	}
	return u
}
