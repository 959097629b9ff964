package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// searchThenReport searches on each of its first steps and reports on
// the step after the given number of searches.
func searchThenReport(searches int) *scriptModel {
	return &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		if turns(req) >= searches || !req.MayCallTools() {
			return llm.Message{Content: "the report"}, nil
		}
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", `{"query":"context deadline"}`)}}, nil
	}}
}

// stepJobs counts the step jobs made for a run, and those that did not
// complete on their first attempt.
func stepJobs(t *testing.T, pool *pgxpool.Pool, runID int64) (all, retried int) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `SELECT count(*),
			count(*) FILTER (WHERE attempt > 1 OR coalesce(array_length(errors, 1), 0) > 0 OR state <> 'completed')
		FROM river_job WHERE kind = 'gb_step' AND (args->>'run_id')::bigint = $1`, runID).Scan(&all, &retried)
	if err != nil {
		t.Fatal(err)
	}
	return all, retried
}

// checkSteps checks that a run recorded steps 1..n, each once, with its
// events and a state history that alternates the tool's state and
// thinking.
func checkSteps(t *testing.T, pool *pgxpool.Pool, runID int64, n int) {
	t.Helper()
	ctx := context.Background()
	var steps, stepEvents, toolEvents, maxStep int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM gb_agent_research_steps WHERE run_id = $1),
			(SELECT coalesce(max(step), 0) FROM gb_agent_research_steps WHERE run_id = $1),
			(SELECT count(*) FROM gb_agent_research_events WHERE run_id = $1 AND kind = 'step'),
			(SELECT count(*) FROM gb_agent_research_events
			 WHERE run_id = $1 AND kind = 'step' AND jsonb_array_length(data->'tools') = 1)
			- (SELECT count(*) FROM gb_agent_research_events WHERE run_id = $1 AND kind = 'tool')`, runID).
		Scan(&steps, &maxStep, &stepEvents, &toolEvents); err != nil {
		t.Fatal(err)
	}
	// A step's tools are listed in its own event, with no event of their own.
	if steps != n || maxStep != n || stepEvents != n || toolEvents != n-1 {
		t.Fatalf("%d steps up to %d, %d step events, %d steps with a tool and no tool events; want %d, %d, %d, %d",
			steps, maxStep, stepEvents, toolEvents, n, n, n, n-1)
	}
	states, err := jobs.States(ctx, pool, runID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range states {
		got = append(got, fmt.Sprintf("%s@%d", s.State, s.Step))
	}
	want := []string{"queued@0"}
	for i := 1; i < n; i++ {
		want = append(want, fmt.Sprintf("thinking@%d", i), fmt.Sprintf("searching@%d", i))
	}
	want = append(want, fmt.Sprintf("thinking@%d", n), fmt.Sprintf("writing@%d", n), fmt.Sprintf("done@%d", n))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("states\n got %v\nwant %v", got, want)
	}
}

// A run's consecutive steps are made by one job, each committed on its
// own; with a negative slice every step is a job of its own. Both record
// the same steps, events and states.
func TestConsecutiveStepsShareAJob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		slice time.Duration
		jobs  int
		// readied says the calls of steps 2..6 are admitted in the
		// commit of the step before them.
		readied bool
	}{
		{"one job", 0, 1, true},
		{"a job per step", -1, 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{model: searchThenReport(5), config: jobs.Config{Slice: tc.slice}})
			run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "deadlines"})
			if err != nil {
				t.Fatal(err)
			}
			done := waitEnded(t, b.pool, run.ID, 30*time.Second)
			if done.Status != jobs.StatusSucceeded || done.Steps != 6 || done.Report != "the report" {
				t.Fatalf("%s after %d steps: %q", done.Status, done.Steps, done.Error)
			}
			if all, retried := stepJobs(t, b.pool, run.ID); all != tc.jobs || retried != 0 {
				t.Fatalf("%d step jobs, %d retried; want %d and 0", all, retried, tc.jobs)
			}
			checkSteps(t, b.pool, run.ID, 6)
			checkReadied(t, b.pool, run.ID, 6, tc.readied)
		})
	}
}

// checkReadied checks a run's ledger: one answered call per step, none
// released or left open, and the call of each step after the first
// admitted in the commit of the step before it (its row's transaction
// began before that step's row was written) when readied, else after
// that commit.
func checkReadied(t *testing.T, pool *pgxpool.Pool, runID int64, n int, readied bool) {
	t.Helper()
	var settled, other, inCommit, after int
	if err := pool.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM gb_model_calls WHERE run_id = $1 AND status = 'settled' AND outcome = 'answered' AND NOT estimated),
			(SELECT count(*) FROM gb_model_calls WHERE run_id = $1 AND NOT (status = 'settled' AND outcome = 'answered')),
			count(*) FILTER (WHERE c.created_at <= s.created_at), count(*) FILTER (WHERE c.created_at > s.created_at)
		FROM gb_model_calls c JOIN gb_agent_research_steps s ON s.run_id = c.run_id AND s.step = c.step - 1
		WHERE c.run_id = $1`, runID).Scan(&settled, &other, &inCommit, &after); err != nil {
		t.Fatal(err)
	}
	if settled != n || other != 0 {
		t.Fatalf("ledger: %d calls answered and settled, %d others; want %d and 0", settled, other, n)
	}
	if want := n - 1; (readied && inCommit != want) || (!readied && after != want) {
		t.Fatalf("of the calls of steps 2..%d, %d were admitted in the commit before and %d after it (readied: %v)",
			n, inCommit, after, readied)
	}
}

// A worker that stops while a job is making a step lets the step commit,
// then hands the run over to a new step job instead of making the next
// step: no attempt is spent, and another worker finishes the run.
func TestStopHandsTheRunOver(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	b := setupOn(t, pool, setupOpts{noWork: true})
	inStep3 := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	model := &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		if turns(req) == 2 {
			once.Do(func() { close(inStep3) })
			select {
			case <-release:
			case <-ctx.Done():
				return llm.Message{}, ctx.Err()
			}
		}
		return searchThenReport(5).fn(ctx, req)
	}}
	a := startWorker(t, pool, model, jobs.Config{}, nil)
	run, _, err := a.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "deadlines"})
	if err != nil {
		t.Fatal(err)
	}
	<-inStep3
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		stopped <- a.Stop(ctx)
	}()
	// Let Stop begin before the step ends.
	waitFor(t, 5*time.Second, "the worker to stop fetching", func() bool { return a.Stopping() })
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	got, err := jobs.GetRun(context.Background(), pool, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var next, attempts int
	if err := pool.QueryRow(context.Background(), `SELECT (args->>'step')::int, attempt FROM river_job
		WHERE kind = 'gb_step' AND (args->>'run_id')::bigint = $1 AND state = 'available'`, run.ID).Scan(&next, &attempts); err != nil {
		t.Fatalf("no step job waits for the run: %v", err)
	}
	if got.Steps != 3 || got.Ended() || next != 4 || attempts != 0 {
		t.Fatalf("run at step %d (%s), next job for step %d with %d attempts; want 3, a job for step 4 never tried",
			got.Steps, got.Status, next, attempts)
	}
	startWorker(t, pool, searchThenReport(5), jobs.Config{}, nil)
	done := waitEnded(t, pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Steps != 6 {
		t.Fatalf("%s after %d steps: %q", done.Status, done.Steps, done.Error)
	}
	if _, retried := stepJobs(t, pool, run.ID); retried != 0 {
		t.Fatalf("%d step jobs retried", retried)
	}
	checkSteps(t, pool, run.ID, 6)
}

// startOrder records the order in which steps start.
type startOrder struct {
	mu    sync.Mutex
	steps []string
	names map[int64]string
}

func (o *startOrder) StepStarted(id int64, step int, _ time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.steps = append(o.steps, fmt.Sprintf("%s/%d", o.names[id], step))
}

func (o *startOrder) StepCommitted(int64, int, time.Time) {}

func (o *startOrder) name(id int64, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.names[id] = name
}

// With one worker slot, the steps of a tree under way go ahead of the
// first step of a tree that started later, even when they were queued
// after it: tree A's sub-agents and its resume run before tree B's root.
// A step that spawns hands its run over, so the sub-agents it queued go
// ahead of their parent's next step.
func TestTreesUnderWayGoFirst(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	b := setupOn(t, pool, setupOpts{noWork: true})
	ctx := context.Background()
	order := &startOrder{names: map[int64]string{}}
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		switch {
		case strings.HasPrefix(topic(req), "part"), topic(req) == "tree B", !req.MayCallTools(), turns(req) >= 2:
			return llm.Message{Content: "report of " + topic(req)}, nil
		case turns(req) == 1:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
		}
		return llm.Message{ToolCalls: []llm.ToolCall{
			toolCall("spawn_subagent", `{"name":"one","reason":"first part","task":"part one"}`),
			toolCall("spawn_subagent", `{"name":"two","reason":"second part","task":"part two"}`)}}, nil
	}}
	treeA, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "tree A"})
	if err != nil {
		t.Fatal(err)
	}
	treeB, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "tree B"})
	if err != nil {
		t.Fatal(err)
	}
	order.name(treeA.ID, "A")
	order.name(treeB.ID, "B")
	// Name the sub-agents as they appear: their first step comes after
	// tree A's first commit.
	startAgent(t, jobs.Deps{Pool: pool, Model: model, Observer: namer{order, pool}, Config: jobs.Config{MaxWorkers: 1}})
	for _, id := range []int64{treeA.ID, treeB.ID} {
		if r := waitEnded(t, pool, id, 30*time.Second); r.Status != jobs.StatusSucceeded {
			t.Fatalf("run %d %s: %q", id, r.Status, r.Error)
		}
	}
	order.mu.Lock()
	got := strings.Join(order.steps, " ")
	order.mu.Unlock()
	if want := "A/1 A.one/1 A.two/1 A/2 A/3 B/1"; got != want {
		t.Fatalf("steps started in the order %s; want %s", got, want)
	}
}

// namer is an Observer that names sub-agents after their parent's name
// and their own before recording their steps.
type namer struct {
	order *startOrder
	pool  *pgxpool.Pool
}

func (n namer) StepStarted(id int64, step int, at time.Time) {
	n.order.mu.Lock()
	_, known := n.order.names[id]
	n.order.mu.Unlock()
	if !known {
		r, err := jobs.GetRun(context.Background(), n.pool, id)
		if err == nil && r.ParentID != nil {
			n.order.mu.Lock()
			n.order.names[id] = n.order.names[*r.ParentID] + "." + r.Name
			n.order.mu.Unlock()
		}
	}
	n.order.StepStarted(id, step, at)
}

func (n namer) StepCommitted(id int64, step int, at time.Time) {}
