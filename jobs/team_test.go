package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

func TestConcurrentSpawnsRespectLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Each goroutine tries a few random agents of the tree until one
			// takes its spawn or the tree is full.
			for attempt := 0; attempt < 10; attempt++ {
				tree, err := jobs.Tree(ctx, b.pool, root.ID)
				if err != nil {
					t.Error(err)
					return
				}
				parent := tree[rand.IntN(len(tree))]
				_, err = b.agent.SpawnForTest(ctx, parent.ID, jobs.SpawnParams{
					Name: fmt.Sprintf("a%d", i%7), Reason: "covers a part", Task: "find something"})
				switch {
				case err == nil:
					ok.Add(1)
					return
				case jobs.IsToolError(err):
					refused.Add(1)
					if strings.Contains(err.Error(), "in all") {
						return
					}
				default:
					t.Error(err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	tree, err := jobs.Tree(ctx, b.pool, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	perParent := map[int64]int{}
	maxDepth := 0
	for _, r := range tree[1:] {
		perParent[*r.ParentID]++
		maxDepth = max(maxDepth, r.Depth)
	}
	for p, n := range perParent {
		if n > jobs.MaxSubagentsPerAgent {
			t.Errorf("run %d has %d sub-agents, limit %d", p, n, jobs.MaxSubagentsPerAgent)
		}
	}
	if n := len(tree) - 1; n != jobs.MaxSubagentsPerTree || int64(n) != ok.Load() {
		t.Errorf("tree has %d sub-agents (%d spawns succeeded), want exactly %d", n, ok.Load(), jobs.MaxSubagentsPerTree)
	}
	if maxDepth > jobs.MaxSubagentDepth {
		t.Errorf("depth %d, limit %d", maxDepth, jobs.MaxSubagentDepth)
	}
	if refused.Load() < 190 {
		t.Errorf("only %d spawns refused", refused.Load())
	}
	var jobsN int
	if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'gb_step'").Scan(&jobsN); err != nil {
		t.Fatal(err)
	}
	if jobsN != len(tree) {
		t.Errorf("%d step jobs for %d runs: every run must have exactly its first job", jobsN, len(tree))
	}
}

func TestSpawnValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	good := jobs.SpawnParams{Name: "alpha", Reason: "why", Task: "what"}
	cases := map[string]struct {
		p    jobs.SpawnParams
		want string
	}{
		"bad name":    {jobs.SpawnParams{Name: "no spaces", Reason: "r", Task: "t"}, "letters, digits"},
		"long name":   {jobs.SpawnParams{Name: strings.Repeat("a", 41), Reason: "r", Task: "t"}, "1 to 40"},
		"no reason":   {jobs.SpawnParams{Name: "a", Task: "t"}, "reason is required"},
		"long reason": {jobs.SpawnParams{Name: "a", Reason: strings.Repeat("r", 301), Task: "t"}, "at most 300"},
		"no task":     {jobs.SpawnParams{Name: "a", Reason: "r"}, "task is required"},
		"long task":   {jobs.SpawnParams{Name: "a", Reason: "r", Task: strings.Repeat("t", 2001)}, "at most 2000"},
		"steps":       {jobs.SpawnParams{Name: "a", Reason: "r", Task: "t", MaxSteps: 41}, "max_steps"},
	}
	for name, c := range cases {
		_, err := b.agent.SpawnForTest(ctx, root.ID, c.p)
		if !jobs.IsToolError(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a tool error containing %q", name, err, c.want)
		}
	}
	child, err := b.agent.SpawnForTest(ctx, root.ID, good)
	if err != nil {
		t.Fatal(err)
	}
	if child.MaxSteps != jobs.DefaultMaxSteps || child.Depth != 1 || child.RootID != root.ID ||
		*child.ParentID != root.ID || child.Topic != "what" || child.Dataset != root.Dataset || child.Model != root.Model {
		t.Errorf("child run: %+v", child)
	}
	if _, err := b.agent.SpawnForTest(ctx, root.ID, good); !jobs.IsToolError(err) || !strings.Contains(err.Error(), "already") {
		t.Errorf("duplicate name: %v", err)
	}
	grand, err := b.agent.SpawnForTest(ctx, child.ID, jobs.SpawnParams{Name: "g", Reason: "r", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.agent.SpawnForTest(ctx, grand.ID, jobs.SpawnParams{Name: "x", Reason: "r", Task: "t"}); !jobs.IsToolError(err) {
		t.Errorf("third generation: %v", err)
	}
}

// gate blocks sub-agents' model calls until it is opened.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate  { return &gate{ch: make(chan struct{})} }
func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }
func (g *gate) wait(ctx context.Context) error {
	select {
	case <-g.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// parentModel spawns n children, waits for them and reports; children
// wait at the gate, then report.
func parentModel(n int, g *gate, wait bool) *scriptModel {
	return &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		if strings.HasPrefix(topic(req), "child") {
			if err := g.wait(ctx); err != nil {
				return llm.Message{}, err
			}
			return llm.Message{Content: "child report on " + topic(req)}, nil
		}
		switch turns(req) {
		case 0:
			var calls []llm.ToolCall
			for i := 0; i < n; i++ {
				calls = append(calls, toolCall("spawn_subagent",
					fmt.Sprintf(`{"name":"c%d","reason":"part %d needs its own search","task":"child task %d"}`, i, i, i)))
			}
			return llm.Message{ToolCalls: calls}, nil
		case 1:
			if wait {
				return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
			}
		}
		return llm.Message{Content: "root report; children said:\n" + lastToolResult(req)}, nil
	}}
}

func TestParkedParentsHoldNoJobAndResumeOnce(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.open()
	const roots, kids = 50, 4
	// Blocked children hold worker slots, so give the roots room beside them.
	b := setup(t, setupOpts{model: parentModel(kids, g, true), config: jobs.Config{MaxWorkers: roots*kids + roots}})
	ctx := context.Background()
	var ids []int64
	for i := 0; i < roots; i++ {
		// Each root belongs to its own user: the per-user limit is 3.
		uid := newUser(t, b.pool, fmt.Sprintf("u%d", i))
		run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: uid, Topic: fmt.Sprintf("root %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var waiting int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_runs
			WHERE id = ANY($1) AND status = 'waiting' AND state = 'waiting'`, ids).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == roots {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d roots parked", waiting, roots)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var rootJobs int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'gb_step'
		AND finalized_at IS NULL AND (args->>'run_id')::bigint = ANY($1)`, ids).Scan(&rootJobs); err != nil {
		t.Fatal(err)
	}
	if rootJobs != 0 {
		t.Fatalf("%d parked roots still have a River job", rootJobs)
	}
	g.open()
	for _, id := range ids {
		run := waitEnded(t, b.pool, id, 60*time.Second)
		if run.Status != jobs.StatusSucceeded || run.Steps != 3 {
			t.Errorf("root %d: %s after %d steps: %s", id, run.Status, run.Steps, run.Error)
		}
		if strings.Count(run.Report, "child report on child task") != kids {
			t.Errorf("root %d report lacks its children's reports:\n%s", id, run.Report)
		}
	}
	var resumed int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_events
		WHERE run_id = ANY($1) AND kind = 'resumed'`, ids).Scan(&resumed); err != nil {
		t.Fatal(err)
	}
	if resumed != roots {
		t.Fatalf("%d resumes for %d roots, want exactly one each", resumed, roots)
	}
	// The state history of each resumed root says it went back to thinking.
	var rethought int
	for _, id := range ids {
		states, err := jobs.States(ctx, b.pool, id)
		if err != nil {
			t.Fatal(err)
		}
		waited := false
		for _, s := range states {
			if s.State == jobs.StateWaiting {
				waited = true
			} else if waited && s.State == jobs.StateThinking {
				rethought++
				break
			}
		}
	}
	if rethought != roots {
		t.Fatalf("%d of %d resumed roots have thinking after waiting in their state history", rethought, roots)
	}
}

func TestEndingParentCancelsWorkingChildrenFirst(t *testing.T) {
	t.Parallel()
	g := newGate() // never opened: the children stay in their first step
	defer g.open()
	b := setup(t, setupOpts{model: parentModel(2, g, false)})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, root.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded {
		t.Fatalf("root %s: %s", done.Status, done.Error)
	}
	tree, err := jobs.Tree(ctx, b.pool, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != 3 {
		t.Fatalf("tree of %d runs", len(tree))
	}
	for _, kid := range tree[1:] {
		if kid.Status != jobs.StatusFailed || kid.Error != jobs.CancelledByParent {
			t.Errorf("child %s: %s %q", kid.Name, kid.Status, kid.Error)
		}
		if kid.EndedAt == nil || !kid.EndedAt.Before(*done.EndedAt) {
			t.Errorf("child %s ended at %v, not before its parent at %v", kid.Name, kid.EndedAt, done.EndedAt)
		}
	}
	var open int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE finalized_at IS NULL AND state <> 'running'`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Errorf("%d queued jobs of cancelled children left", open)
	}
	// The timeline tells the cause before its effects: the root's last
	// step, then its children's cancellations, then its own end.
	events, err := jobs.Events(ctx, b.pool, root.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range events {
		switch {
		case e.RunID == root.ID && e.Kind == jobs.EventStep:
			order = append(order, fmt.Sprintf("step %d", len(order)+1))
		case e.Kind == jobs.EventCancelled || (e.RunID == root.ID && e.Kind == jobs.EventCompleted):
			order = append(order, e.Kind)
		}
	}
	if want := []string{"step 1", "step 2", jobs.EventCancelled, jobs.EventCancelled, jobs.EventCompleted}; !slices.Equal(order, want) {
		t.Errorf("the tree's timeline: %v, want %v", order, want)
	}
}

func TestCancelOneSubagentResumesItsParent(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.open()
	b := setup(t, setupOpts{model: parentModel(1, g, true)})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	var kid *jobs.Run
	deadline := time.Now().Add(30 * time.Second)
	for kid == nil {
		r, err := jobs.GetRun(ctx, b.pool, root.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == jobs.StatusWaiting {
			tree, _ := jobs.Tree(ctx, b.pool, root.ID)
			kid = tree[1]
		}
		if time.Now().After(deadline) {
			t.Fatal("root never parked")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := b.agent.Cancel(ctx, b.userID+1000, kid.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("another user cancelled the run: %v", err)
	}
	cancelled, err := b.agent.Cancel(ctx, b.userID, kid.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.Status != jobs.StatusFailed || !strings.Contains(cancelled.Error, "cancelled") {
		t.Fatalf("cancelled child: %s %q", cancelled.Status, cancelled.Error)
	}
	done := waitEnded(t, b.pool, root.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded || !strings.Contains(done.Report, "error: cancelled by its owner") {
		t.Fatalf("root %s, report:\n%s", done.Status, done.Report)
	}
}

func TestTreeBudgetStopsSubagentsAndRootStillReports(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	const budget = 10000
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, MaxTokens: budget,
		Topic: "How do goroutines and channels synchronize work, and how does the context package carry cancellation?"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, root.ID, 30*time.Second)
	tree, err := jobs.Tree(ctx, b.pool, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tree {
		t.Logf("run %d %s %s steps %d tokens %d: %s", r.ID, r.Name, r.Status, r.Steps, r.Tokens, r.Error)
	}
	// The root writes its report from the share kept for it, or, when
	// even that is short, fails and keeps its sub-agents' reports.
	if done.Report == "" || (done.Status != jobs.StatusSucceeded && !strings.HasPrefix(done.Error, "budget exhausted")) {
		t.Fatalf("root %s %q", done.Status, done.Error)
	}
	stopped := 0
	for _, r := range tree[1:] {
		if r.Status == jobs.StatusFailed && strings.HasPrefix(r.Error, "budget exhausted") {
			stopped++
		}
	}
	var rootStopped int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_events WHERE run_id = $1 AND kind = 'budget_exhausted'`,
		root.ID).Scan(&rootStopped); err != nil {
		t.Fatal(err)
	}
	if stopped+rootStopped == 0 {
		t.Fatalf("the budget stopped no agent")
	}
	checkBudgetBound(t, b.pool, root.ID, budget)
}

// checkBudgetBound checks that a tree spent at most its token budget plus
// what its calls used beyond what they had reserved.
func checkBudgetBound(t *testing.T, pool *pgxpool.Pool, rootID, budget int64) {
	t.Helper()
	var spent, overrun, calls int64
	if err := pool.QueryRow(context.Background(), `SELECT
			(SELECT sum(tokens) FROM gb_agent_research_runs WHERE root_id = $1),
			coalesce(sum(greatest(0, prompt_tokens + completion_tokens - reserved_tokens)), 0), count(*)
		FROM gb_model_calls WHERE root_id = $1 AND status = 'settled'`, rootID).Scan(&spent, &overrun, &calls); err != nil {
		t.Fatal(err)
	}
	t.Logf("tree %d spent %d tokens of %d in %d calls; estimation error %d", rootID, spent, budget, calls, overrun)
	if spent > budget+overrun {
		t.Errorf("tree spent %d tokens on a %d-token budget, beyond the estimation error %d", spent, budget, overrun)
	}
}

func TestWaitThenCancelInOneStepStillResumes(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.open()
	model := &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		if strings.HasPrefix(topic(req), "child") {
			return llm.Message{}, g.wait(ctx)
		}
		switch turns(req) {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("spawn_subagent",
				`{"name":"a","reason":"needed","task":"child task"}`)}}, nil
		case 1:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{"names":["a"]}`),
				toolCall("cancel_subagent", `{"name":"a"}`)}}, nil
		}
		return llm.Message{Content: "report: " + lastToolResult(req)}, nil
	}}
	b := setup(t, setupOpts{model: model})
	root, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, root.ID, 20*time.Second)
	if done.Status != jobs.StatusSucceeded || !strings.Contains(done.Report, "cancelled by the agent that spawned it") {
		t.Fatalf("%s %q report %q", done.Status, done.Error, done.Report)
	}
}

func TestDeletingASubagentOfAWorkingTreeIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	kid, err := b.agent.SpawnForTest(ctx, root.ID, jobs.SpawnParams{Name: "a", Reason: "r", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.agent.Delete(ctx, b.userID, kid.ID); !errors.Is(err, jobs.ErrTreeWorking) {
		t.Fatalf("delete of a working tree's sub-agent: %v", err)
	}
	if _, err := b.agent.Cancel(ctx, b.userID, root.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.agent.Delete(ctx, b.userID, kid.ID); err != nil {
		t.Fatalf("delete after the tree ended: %v", err)
	}
	if err := b.agent.Delete(ctx, b.userID, root.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.GetRun(ctx, b.pool, root.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("root still there: %v", err)
	}
}
