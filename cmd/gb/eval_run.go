package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/jobs"
)

// evalPoll is how often a question's research is looked at until it ends.
const evalPoll = 200 * time.Millisecond

// citationCounts are the verdicts of a report's citation check, as the run
// JSON carries them (`citations`, and `citations_before` after a
// revision).
type citationCounts struct {
	Claims      int `json:"claims"`
	Supported   int `json:"supported"`
	Weak        int `json:"weak"`
	Unsupported int `json:"unsupported"`
	Unread      int `json:"unread"`
	Uncited     int `json:"uncited"`
}

// evalRun is what gb eval reads of a run from the API.
type evalRun struct {
	ID              int64           `json:"id"`
	Status          string          `json:"status"`
	Model           string          `json:"model"`
	Report          string          `json:"report"`
	Error           string          `json:"error"`
	CreatedAt       time.Time       `json:"created_at"`
	EndedAt         *time.Time      `json:"ended_at"`
	Citations       *citationCounts `json:"citations"`
	CitationsBefore *citationCounts `json:"citations_before"`
	ForkedFrom      *int64          `json:"forked_from"`
}

// ended says whether the run is over.
func (r *evalRun) ended() bool {
	switch r.Status {
	case jobs.StatusSucceeded, jobs.StatusFailed, jobs.StatusTimedOut, "cancelled":
		return true
	}
	return false
}

// evalResult is one question researched under one configuration.
type evalResult struct {
	Question string `json:"question"`
	Config   string `json:"config"`
	RunID    int64  `json:"run_id,omitempty"`
	// Status is the run's, or "skipped" or "error" when it did not run.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Score  score  `json:"score"`
	// Citations and CitationsBefore are the run's citation check, when
	// the service makes one.
	Citations       *citationCounts `json:"citations,omitempty"`
	CitationsBefore *citationCounts `json:"citations_before,omitempty"`
	// The tree's usage: every agent's tokens, the cached part of them, cost.
	Tokens       int64   `json:"tokens"`
	CachedTokens int64   `json:"cached_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	WallSeconds  float64 `json:"wall_seconds"`
	Agents       int     `json:"agents"`
	Steps        int     `json:"steps"`
	Report       string  `json:"report,omitempty"`
	// ForkedFrom is the research this one forked (--vs-fork-step).
	ForkedFrom int64 `json:"forked_from,omitempty"`
	slot       int   // the client (user) of runConfig that researched it
}

// evalUser names the user of one slot of a configuration: each slot runs
// one research at a time, within the per-user limit of working ones.
func evalUser(label string, slot int) string { return fmt.Sprintf("gb-eval-%s-%d", label, slot) }

// evalForks says that a configuration researches each question as a fork
// of another's research of it (gb eval --vs-fork-step): at step of its
// root, as the user who owns it (the slot of the owner configuration that
// ran it).
type evalForks struct {
	step  int
	of    []evalResult
	owner string
}

// runConfig researches every question of set under the configuration of
// s, parallel at a time, and returns the results in the set's order; with
// forks, each question is a fork of the research forks.of holds for it.
func runConfig(ctx context.Context, pool *pgxpool.Pool, s *evalStack, set *evalSet, parallel int, timeout time.Duration,
	progress func(string), forks *evalForks) ([]evalResult, error) {
	label := s.cfg.Label
	if forks != nil {
		label = forks.owner // a fork is its original's owner's
	}
	clients := make([]*apiClient, parallel)
	for i := range clients {
		key, err := jobs.CreateKey(ctx, pool, evalUser(label, i+1))
		if err != nil {
			return nil, err
		}
		c := *s.client
		c.key = key
		clients[i] = &c
	}
	results := make([]evalResult, len(set.Questions))
	next := make(chan int)
	var wg sync.WaitGroup
	for slot, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if forks != nil {
					c = clients[forks.of[i].slot]
				}
				start := startQuestion(c, &set.Questions[i], forks, i, s.cfg.Model)
				results[i] = researchQuestion(ctx, c, s, &set.Questions[i], timeout, start)
				results[i].slot = slot
				r := results[i]
				progress(fmt.Sprintf("%s %s: %s, %d/%d facts (run %d)", s.cfg.Label, r.Question, r.Status,
					len(r.Score.Found), len(r.Score.Found)+len(r.Score.Missed), r.RunID))
			}
		}()
	}
	for i := range set.Questions {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return results, ctx.Err()
}

// startQuestion is how a question's research starts: a research of its
// own, or, with forks, a fork of the research forks.of[i] made of it, with
// the forking configuration's model and its prompts (pin latest).
func startQuestion(c *apiClient, q *evalQuestion, forks *evalForks, i int, model string) func(ctx context.Context, run *evalRun) error {
	if forks == nil {
		return func(ctx context.Context, run *evalRun) error {
			body := map[string]any{"topic": q.Question}
			if q.Dataset != "" {
				body["dataset"] = q.Dataset
			}
			if q.MaxSteps > 0 {
				body["max_steps"] = q.MaxSteps
			}
			return c.do(ctx, "POST", "/v1/gb/research", body, run)
		}
	}
	return func(ctx context.Context, run *evalRun) error {
		orig := forks.of[i]
		if orig.RunID == 0 {
			return fmt.Errorf("nothing to fork: %s's research of it did not start (%s)", forks.owner, orig.Status)
		}
		body := map[string]any{"step": forks.step, "model": model, "pin": jobs.PinLatest}
		return c.do(ctx, "POST", fmt.Sprintf("/v1/gb/research/%d/fork", orig.RunID), body, run)
	}
}

// researchQuestion starts one research, waits for it to end and scores it.
func researchQuestion(ctx context.Context, c *apiClient, s *evalStack, q *evalQuestion, timeout time.Duration,
	start func(context.Context, *evalRun) error) evalResult {
	res := evalResult{Question: q.ID, Config: s.cfg.Label}
	if q.Web && !s.web {
		res.Status, res.Error = "skipped", "a web question, and this configuration has no search provider (GB_SEARCH_*)"
		return res
	}
	var run evalRun
	if err := start(ctx, &run); err != nil {
		res.Status, res.Error = "error", err.Error()
		return res
	}
	res.RunID = run.ID
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !run.ended() {
		select {
		case <-wctx.Done():
			res.Status, res.Error = "error", fmt.Sprintf("did not end within %s (status %s)", timeout, run.Status)
			_ = c.do(context.WithoutCancel(ctx), "POST", fmt.Sprintf("/v1/gb/research/%d/cancel", run.ID), nil, nil)
			return res
		case <-time.After(evalPoll):
		}
		if err := c.do(wctx, "GET", fmt.Sprintf("/v1/gb/research/%d", run.ID), nil, &run); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			res.Status, res.Error = "error", err.Error()
			return res
		}
	}
	var tree treeResponse
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/tree", run.ID), nil, &tree); err != nil {
		res.Status, res.Error = "error", err.Error()
		return res
	}
	res.Status, res.Error, res.Report = run.Status, run.Error, run.Report
	res.Citations, res.CitationsBefore = run.Citations, run.CitationsBefore
	res.Tokens, res.CachedTokens, res.CostUSD = tree.Totals.Tokens, tree.Totals.CachedTokens, tree.Totals.CostUSD
	res.Agents, res.Steps = tree.Totals.Runs, tree.Totals.Steps
	if run.EndedAt != nil {
		res.WallSeconds = run.EndedAt.Sub(run.CreatedAt).Seconds()
	}
	res.Score = scoreReport(q, run.Report)
	if run.ForkedFrom != nil {
		res.ForkedFrom = *run.ForkedFrom
	}
	return res
}
