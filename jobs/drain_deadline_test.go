package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// Tests of a drain's deadlines (deadline.go): a drain starts no step that
// cannot finish before its CancelAt, and a job that deadlines interrupted
// ProtectAfter times in a row is protected.

// stepModel makes runs of a set number of steps: a search on each, then a
// report. Each call waits the delay its plan gives it (calls count from
// 1); a negative delay holds the call until its context ends, or a minute,
// after which it fails so that a call never cancelled cannot hang a test.
type stepModel struct {
	name  string
	steps int
	plan  func(call int) time.Duration
	calls atomic.Int32
}

func (m *stepModel) Name() string { return m.name }

func (m *stepModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	n := int(m.calls.Add(1))
	wait := m.plan(n)
	if wait < 0 {
		wait = time.Minute
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	case <-timer.C:
	}
	if m.plan(n) < 0 {
		return llm.Response{}, fmt.Errorf("call %d was never cancelled", n)
	}
	msg := llm.Message{Role: llm.RoleAssistant, Content: "The report, from what the searches found."}
	if turns(req) < m.steps-1 {
		msg.Content = ""
		msg.ToolCalls = []llm.ToolCall{{ID: fmt.Sprintf("call_%d", n), Name: "search",
			Arguments: json.RawMessage(`{"query":"context cancellation"}`)}}
	}
	return llm.Response{Message: msg, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 10}}, nil
}

// stepsCommitted is the number of steps every run has committed.
func (b *drainBundle) stepsCommitted(t *testing.T) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(),
		"SELECT coalesce(sum(steps), 0) FROM gb_agent_research_runs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// queuedFirst reports whether the only job left available is queued
// ahead of every step job.
func (b *drainBundle) queuedFirst(t *testing.T) bool {
	t.Helper()
	var first bool
	if err := b.pool.QueryRow(context.Background(), `SELECT scheduled_at = 'epoch' FROM river_job
		WHERE state = 'available'`).Scan(&first); err != nil {
		t.Fatal(err)
	}
	return first
}

// TestDrainFinishesStepsLongerThanHalfTheInvocation: model calls of 2.5 s
// in invocations of 5 to 8 s, back to back. Each invocation starts only
// the steps that fit before its CancelAt, so each one commits steps, every
// run ends within as many invocations as it has steps, and no job is
// interrupted more than ProtectAfter times in a row.
func TestDrainFinishesStepsLongerThanHalfTheInvocation(t *testing.T) {
	t.Parallel()
	const steps = 4
	model := &stepModel{name: "slow", steps: steps, plan: func(int) time.Duration { return 2500 * time.Millisecond }}
	b := newDrainBundle(t, model, jobs.Config{StepTimeout: 4 * time.Second})
	var runs []*jobs.Run
	for i := range 6 {
		runs = append(runs, b.start(t, b.users[i%2], fmt.Sprintf("How does cancellation reach goroutine %d?", i)))
	}
	invocations, committing, interrupted := 0, 0, 0
	ctx := context.Background()
	for _, d := range []time.Duration{5, 6, 7, 8} {
		if b.allEnded(t, runs) {
			break
		}
		before := b.stepsCommitted(t)
		res, err := b.agent.Drain(ctx, jobs.DrainParams{CancelAt: time.Now().Add(d * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		invocations++
		interrupted += res.Interrupted
		if b.stepsCommitted(t) > before {
			committing++
		}
		t.Logf("invocation of %ds: %+v", d, res)
		for _, n := range b.interruptions(t) {
			if n > jobs.ProtectAfter {
				t.Fatalf("a job was interrupted %d times in a row; protection starts after %d", n, jobs.ProtectAfter)
			}
		}
	}
	for _, r := range runs {
		run, err := jobs.GetRun(ctx, b.pool, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != jobs.StatusSucceeded || run.Steps != steps {
			t.Fatalf("run %d after %d invocations: %s at step %d (%s); want it done in %d steps",
				run.ID, invocations, run.Status, run.Steps, run.Error, steps)
		}
	}
	if committing != invocations {
		t.Fatalf("%d of %d invocations committed a step; every one has time for one", committing, invocations)
	}
	// A step is interrupted only when it outlasts its expected duration:
	// a drain that started every step it could would interrupt a step of
	// each run in each invocation that does not end it.
	if interrupted > len(runs) {
		t.Fatalf("%d jobs interrupted in %d invocations of %d runs; want steps started only when they fit",
			interrupted, invocations, len(runs))
	}
	// The drains learned how long this model's steps take from the steps
	// that committed.
	if got := b.agent.ExpectedStepForTest(model.Name()); got < 2500*time.Millisecond || got >= 4*time.Second {
		t.Fatalf("expected step duration %s; want the p95 of the committed steps, from 2.5 s and below StepTimeout", got)
	}
	t.Logf("%d invocations, %d jobs interrupted", invocations, interrupted)
}

func (b *drainBundle) allEnded(t *testing.T, runs []*jobs.Run) bool {
	t.Helper()
	for _, r := range runs {
		run, err := jobs.GetRun(context.Background(), b.pool, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !run.Ended() {
			return false
		}
	}
	return true
}

// TestDrainDoesNotStartAStepThatCannotFinish: with no step durations yet,
// a step is expected to take StepTimeout; a drain with less time than that
// puts the job back unstarted and uncharged, not interrupted. Once the
// model's steps are known to be short, a drain as short starts it.
func TestDrainDoesNotStartAStepThatCannotFinish(t *testing.T) {
	t.Parallel()
	model := &stepModel{name: "unknown", steps: 2, plan: func(int) time.Duration { return -1 }}
	b := newDrainBundle(t, model, jobs.Config{StepTimeout: 10 * time.Second})
	run := b.start(t, b.users[0], "How does the context package carry cancellation signals?")
	ctx := context.Background()
	res, err := b.agent.Drain(ctx, jobs.DrainParams{CancelAt: time.Now().Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != jobs.DrainDeadline || res.Deferred < 1 || res.Interrupted != 0 || res.Worked != 0 || res.Ready != 1 {
		t.Fatalf("drain: %+v; want the job put back unstarted", res)
	}
	if n := model.calls.Load(); n != 0 {
		t.Fatalf("the model was called %d times; the step should not have started", n)
	}
	if got := b.jobsOf(t); len(got) != 1 || got[0] != (jobState{State: "available"}) {
		t.Fatalf("job should be available with no attempt spent: %+v", got)
	}
	if n := b.interruptions(t); n[0] != 0 {
		t.Fatalf("a job that did not start was counted as interrupted: %v", n)
	}
	if r, err := jobs.GetRun(ctx, b.pool, run.ID); err != nil || r.Ended() || r.Steps != 0 {
		t.Fatalf("run %+v, %v; want it waiting at step 0", r, err)
	}

	// Steps of this model take 100 ms: the step starts, and is
	// interrupted since its call never ends.
	b.agent.RecordStepDurationsForTest(model.Name(), 100*time.Millisecond, 5)
	res, err = b.agent.Drain(ctx, jobs.DrainParams{CancelAt: time.Now().Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != jobs.DrainDeadline || res.Deferred != 0 || res.Interrupted != 1 || model.calls.Load() != 1 {
		t.Fatalf("drain: %+v, %d calls; want the step started and interrupted", res, model.calls.Load())
	}
}

// TestDrainProtectsAJobInterruptedThreeTimes: a job whose step outlasts
// its expected duration is interrupted by three drains in a row; it is
// then protected: queued ahead of other jobs, not started by a drain with
// less than StepTimeout left, and started by one with StepTimeout left,
// where its step runs past the drain's StopFetchingAt and commits.
func TestDrainProtectsAJobInterruptedThreeTimes(t *testing.T) {
	t.Parallel()
	// Calls 1 to 3 hold until cancelled, the 4th takes a second.
	model := &stepModel{name: "late", steps: 3, plan: func(call int) time.Duration {
		if call == 4 {
			return time.Second
		}
		return -1
	}}
	b := newDrainBundle(t, model, jobs.Config{StepTimeout: 3 * time.Second})
	b.agent.RecordStepDurationsForTest(model.Name(), 50*time.Millisecond, 5)
	run := b.start(t, b.users[0], "How does the context package carry cancellation signals?")
	ctx := context.Background()
	for i := 1; i <= jobs.ProtectAfter; i++ {
		res, err := b.agent.Drain(ctx, jobs.DrainParams{CancelAt: time.Now().Add(1500 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Interrupted != 1 || res.Deferred != 0 {
			t.Fatalf("drain %d: %+v; want the job started and interrupted", i, res)
		}
		if n := b.interruptions(t); len(n) != 1 || n[0] != i {
			t.Fatalf("after drain %d: interruptions in a row %v, want %d", i, n, i)
		}
	}
	if !b.queuedFirst(t) {
		t.Fatal("a protected job should be queued ahead of the others")
	}

	// Less than StepTimeout left: the protected job waits, still first.
	res, err := b.agent.Drain(ctx, jobs.DrainParams{CancelAt: time.Now().Add(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deferred < 1 || res.Interrupted != 0 || model.calls.Load() != jobs.ProtectAfter {
		t.Fatalf("drain with less than StepTimeout left: %+v, %d calls; want the protected job left unstarted",
			res, model.calls.Load())
	}
	if n := b.interruptions(t); n[0] != jobs.ProtectAfter || !b.queuedFirst(t) {
		t.Fatalf("a protected job put back unstarted: interruptions %v; want it still counted and first", n)
	}

	// StepTimeout left: it starts, and its step goes on past
	// StopFetchingAt until it commits.
	res, err = b.agent.Drain(ctx, jobs.DrainParams{
		StopFetchingAt: time.Now().Add(500 * time.Millisecond),
		CancelAt:       time.Now().Add(4 * time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Interrupted != 0 || model.calls.Load() != jobs.ProtectAfter+1 {
		t.Fatalf("drain with StepTimeout left: %+v, %d calls; want the protected job's step run to its end",
			res, model.calls.Load())
	}
	if r, err := jobs.GetRun(ctx, b.pool, run.ID); err != nil || r.Steps != 1 {
		t.Fatalf("run %+v, %v; want its first step committed", r, err)
	}
}

// TestDrainCommittedStepResetsInterruptions: a job interrupted twice in a
// row commits a step, then the same job's next step is interrupted: it has
// been interrupted once in a row, not three times.
func TestDrainCommittedStepResetsInterruptions(t *testing.T) {
	t.Parallel()
	// The first call takes 100 ms, the second holds until cancelled.
	model := &stepModel{name: "then-held", steps: 3, plan: func(call int) time.Duration {
		if call == 1 {
			return 100 * time.Millisecond
		}
		return -1
	}}
	b := newDrainBundle(t, model, jobs.Config{StepTimeout: 3 * time.Second})
	b.agent.RecordStepDurationsForTest(model.Name(), 50*time.Millisecond, 5)
	run := b.start(t, b.users[0], "How does the context package carry cancellation signals?")
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `UPDATE river_job SET metadata = metadata || jsonb_build_object($1::text, 2)`,
		jobs.InterruptionsKey); err != nil {
		t.Fatal(err)
	}
	res, err := b.agent.Drain(ctx, jobs.DrainParams{CancelAt: time.Now().Add(1500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Interrupted != 1 || model.calls.Load() != 2 {
		t.Fatalf("drain: %+v, %d calls; want one job making two steps, the second interrupted", res, model.calls.Load())
	}
	if r, err := jobs.GetRun(ctx, b.pool, run.ID); err != nil || r.Steps != 1 {
		t.Fatalf("run %+v, %v; want its first step committed", r, err)
	}
	if n := b.interruptions(t); len(n) != 1 || n[0] != 1 {
		t.Fatalf("interruptions in a row: %v; want 1 since the job's last committed step", n)
	}
}
