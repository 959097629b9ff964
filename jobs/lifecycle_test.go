package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// Tests of the paths that used to strand a run: every way a step job ends
// leaves its run ended, parked with a resume path, or with a next job.

// startWorker starts a working agent on pool, stopped when the test ends
// unless the test stops it first.
func startWorker(t *testing.T, pool *pgxpool.Pool, model llm.Model, cfg jobs.Config, msgr jobs.Messenger) *jobs.Service {
	t.Helper()
	return startAgent(t, jobs.Deps{Pool: pool, Model: model, Messenger: msgr, Config: cfg})
}

// startAgent starts a working agent built from d.
func startAgent(t *testing.T, d jobs.Deps) *jobs.Service {
	t.Helper()
	d.Work = true
	a, err := jobs.New(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Stop(ctx)
	})
	return a
}

// queueAtLastAttempt starts a research whose first step job will run on
// its last attempt.
func queueAtLastAttempt(t *testing.T, b *testBundle) *jobs.Run {
	t.Helper()
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE river_job SET attempt = max_attempts - 1
		WHERE args @> jsonb_build_object('run_id', $1::bigint)`, run.ID); err != nil {
		t.Fatal(err)
	}
	return run
}

// jobStates lists the state and attempt of each step job of a run.
func jobStates(t *testing.T, pool *pgxpool.Pool, runID int64) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT state::text || ':' || attempt FROM river_job
		WHERE args @> jsonb_build_object('run_id', $1::bigint) AND kind = 'gb_step' ORDER BY id`, runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func countEvents(t *testing.T, pool *pgxpool.Pool, runID int64, kind string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM gb_agent_research_events
		WHERE run_id = $1 AND kind = $2`, runID, kind).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPanicOnTheLastAttemptEndsTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	run := queueAtLastAttempt(t, b)
	startWorker(t, b.pool, &scriptModel{fn: func(context.Context, llm.Request) (llm.Message, error) {
		panic("boom")
	}}, jobs.Config{}, nil)
	done := waitEnded(t, b.pool, run.ID, 20*time.Second)
	if done.Status != jobs.StatusFailed || !strings.Contains(done.Error, "step 1 failed after 5 attempts: step panicked: boom") {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	if got := jobStates(t, b.pool, run.ID); len(got) != 1 || got[0] != "completed:5" {
		t.Fatalf("jobs %v", got)
	}
}

// TestTheLastAttemptsErrorNamesTheStepThatFailed: a job makes its run's
// steps in a row, so the step its last attempt failed on is the run's
// next, not the job's first.
func TestTheLastAttemptsErrorNamesTheStepThatFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	run := queueAtLastAttempt(t, b)
	startWorker(t, b.pool, &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		if turns(req) < 2 {
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("remember",
				fmt.Sprintf(`{"title":"note %d","text":"a finding"}`, turns(req)))}}, nil
		}
		return llm.Message{}, errors.New("the model's answer was cut off")
	}}, jobs.Config{}, nil)
	done := waitEnded(t, b.pool, run.ID, 20*time.Second)
	if done.Status != jobs.StatusFailed || done.Steps != 2 ||
		!strings.Contains(done.Error, "step 3 failed after 5 attempts: ") {
		t.Fatalf("%s after %d steps, %q; want failed at step 3", done.Status, done.Steps, done.Error)
	}
}

func TestInterruptionOnTheLastAttemptSpendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	run := queueAtLastAttempt(t, b)
	inCall := make(chan struct{}, 1)
	blocked := &scriptModel{fn: func(ctx context.Context, _ llm.Request) (llm.Message, error) {
		inCall <- struct{}{}
		<-ctx.Done()
		return llm.Message{}, errors.New("the call was cut short")
	}}
	w := startWorker(t, b.pool, blocked, jobs.Config{}, nil)
	select {
	case <-inCall:
	case <-time.After(20 * time.Second):
		t.Fatal("the step never called the model")
	}
	// The worker stops before the step can end: the step is interrupted.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := jobs.GetRun(context.Background(), b.pool, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ended() {
		t.Fatalf("an interruption ended the run: %s %q", r.Status, r.Error)
	}
	if got := jobStates(t, b.pool, run.ID); len(got) != 1 || got[0] != "available:4" {
		t.Fatalf("the job should be back with its attempt unspent: %v", got)
	}
	startWorker(t, b.pool, &offline.Model{}, jobs.Config{}, nil)
	if done := waitEnded(t, b.pool, run.ID, 20*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
}

// killWorkerOf makes the step job of run look taken by a worker that died
// at attempt (0: its last), with metadata merged into the job's.
func killWorkerOf(t *testing.T, b *testBundle, runID int64, attempt int, metadata string) {
	t.Helper()
	if _, err := b.pool.Exec(context.Background(), `UPDATE river_job SET state = 'running',
		attempt = CASE WHEN $2 = 0 THEN max_attempts ELSE $2 END, metadata = metadata || $3::jsonb,
		attempted_at = now() - interval '5 seconds', attempted_by = '{gone}'
		WHERE args @> jsonb_build_object('run_id', $1::bigint)`, runID, attempt, metadata); err != nil {
		t.Fatal(err)
	}
}

// maintainTwice runs the maintenance pass, waits for a dead worker's
// liveness to be confirmed, and runs it again, returning the second's.
func maintainTwice(t *testing.T, b *testBundle) jobs.MaintainResult {
	t.Helper()
	ctx := context.Background()
	if _, err := b.agent.Maintain(ctx, jobs.MaintainParams{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(jobs.LivenessConfirm)
	res, err := b.agent.Maintain(ctx, jobs.MaintainParams{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestADeadWorkersLastAttemptSpendsNothing: a step job whose worker died
// on its last attempt is put back with that attempt given back, and its
// run goes on.
func TestADeadWorkersLastAttemptSpendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	run := queueAtLastAttempt(t, b)
	killWorkerOf(t, b, run.ID, 0, `{}`)
	if res := maintainTwice(t, b); res.DeadWorkers != 1 || res.Rescued != 1 || res.Discarded != 0 || res.Lost != 0 {
		t.Fatalf("maintain: %+v", res)
	}
	if got := jobStates(t, b.pool, run.ID); len(got) != 1 || got[0] != "available:4" {
		t.Fatalf("step jobs %v; want one available at attempt 4 (its last attempt given back)", got)
	}
	startWorker(t, b.pool, &offline.Model{}, jobs.Config{}, nil)
	if done := waitEnded(t, b.pool, run.ID, 20*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
}

// TestAStepThatKeepsTakingItsWorkerDownEndsTheRun: the tenth rescue of
// the same step ends its run with an error that says so; rescues of an
// earlier step do not count.
func TestAStepThatKeepsTakingItsWorkerDownEndsTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	earlier := queueAtLastAttempt(t, b)
	killWorkerOf(t, b, earlier.ID, 1, `{"gb:rescued_step": 0, "gb:rescues": 9}`)
	again := queueAtLastAttempt(t, b)
	killWorkerOf(t, b, again.ID, 1, `{"gb:rescued_step": 1, "gb:rescues": 9}`)
	if res := maintainTwice(t, b); res.Rescued != 1 || res.Discarded != 1 || res.Lost != 1 {
		t.Fatalf("maintain: %+v", res)
	}
	r, err := jobs.GetRun(ctx, b.pool, again.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := "step 1 took its worker down 10 times (its worker is gone (it holds no liveness lock) each time)"
	if r.Status != jobs.StatusFailed || !strings.Contains(r.Error, want) {
		t.Fatalf("%s %q; want failed with %q", r.Status, r.Error, want)
	}
	if countEvents(t, b.pool, again.ID, jobs.EventRepaired) != 1 {
		t.Fatal("the end was not recorded on the tree")
	}
	var rescues int
	if err := b.pool.QueryRow(ctx, `SELECT (metadata->>'gb:rescues')::int FROM river_job
		WHERE args @> jsonb_build_object('run_id', $1::bigint)`, earlier.ID).Scan(&rescues); err != nil {
		t.Fatal(err)
	}
	if r, _ := jobs.GetRun(ctx, b.pool, earlier.ID); r.Ended() || rescues != 1 {
		t.Fatalf("a run whose rescues were of another step: %s, rescues %d; want going, 1", r.Status, rescues)
	}
}

func TestFailingEndOnTheLastAttemptIsRepaired(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	run := queueAtLastAttempt(t, b)
	ctx := context.Background()
	// Nothing may end the run for now: every end fails inside Work.
	if _, err := b.pool.Exec(ctx, `
		CREATE FUNCTION refuse_end() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'ends are refused for this test'; END $$;
		CREATE TRIGGER refuse_end BEFORE UPDATE ON gb_agent_research_runs
		FOR EACH ROW WHEN (NEW.status = 'failed') EXECUTE FUNCTION refuse_end()`); err != nil {
		t.Fatal(err)
	}
	cfg := jobs.Config{StepTimeout: time.Second, Slice: -1, RescueStuckJobsAfter: 1500 * time.Millisecond, MaintainInterval: time.Hour}
	w := startWorker(t, b.pool, &scriptModel{fn: func(context.Context, llm.Request) (llm.Message, error) {
		return llm.Message{}, errors.Join(errors.New("rejected"), llm.ErrPermanent)
	}}, cfg, nil)
	waitFor(t, 20*time.Second, "the job to be discarded", func() bool {
		got := jobStates(t, b.pool, run.ID)
		return len(got) == 1 && got[0] == "discarded:5"
	})
	r, _ := jobs.GetRun(ctx, b.pool, run.ID)
	if r.Ended() {
		t.Fatalf("run ended despite the trigger: %s", r.Status)
	}
	if _, err := b.pool.Exec(ctx, "DROP TRIGGER refuse_end ON gb_agent_research_runs"); err != nil {
		t.Fatal(err)
	}
	// The next pass past the repair margin (not the rescue horizon) ends
	// the run: its job was discarded a while ago.
	if _, err := b.pool.Exec(ctx, `UPDATE river_job SET finalized_at = now() - interval '10 seconds'
		WHERE args @> jsonb_build_object('run_id', $1::bigint)`, run.ID); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Maintain(ctx, jobs.MaintainParams{}); err != nil || res.Lost != 1 {
		t.Fatalf("maintain: %+v %v", res, err)
	}
	r, _ = jobs.GetRun(ctx, b.pool, run.ID)
	if r.Status != jobs.StatusFailed || !strings.Contains(r.Error, "step 1's job was lost: it was discarded after 5 attempts") ||
		!strings.Contains(r.Error, "ends are refused") {
		t.Fatalf("%s %q", r.Status, r.Error)
	}
}

func TestRunWithNoJobGetsANewOne(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true, config: jobs.Config{StepTimeout: time.Second, Slice: -1, RescueStuckJobsAfter: 1100 * time.Millisecond}})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "How does sync.WaitGroup work?"})
	if err != nil {
		t.Fatal(err)
	}
	// An operator deletes its job.
	if _, err := b.pool.Exec(ctx, `DELETE FROM river_job WHERE args @> jsonb_build_object('run_id', $1::bigint)`, run.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE gb_agent_research_runs SET updated_at = now() - interval '1 minute' WHERE id = $1`, run.ID); err != nil {
		t.Fatal(err)
	}
	res, err := b.agent.Maintain(ctx, jobs.MaintainParams{})
	if err != nil || res.Repaired != 1 {
		t.Fatalf("maintain: %+v %v", res, err)
	}
	startWorker(t, b.pool, &offline.Model{}, jobs.Config{}, nil)
	if done := waitEnded(t, b.pool, run.ID, 20*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	if countEvents(t, b.pool, run.ID, jobs.EventRepaired) != 1 {
		t.Fatal("the repair was not recorded on the tree")
	}
}

// TestRunWhoseJobCompletedWithoutANextIsRepairedAtOnce: a working run
// whose last step job completed with no next one (a commit acknowledged
// and then lost with a crash of Postgres) gets a new job in the next pass
// past the repair margin, however long the rescue horizon of running
// jobs is.
func TestRunWhoseJobCompletedWithoutANextIsRepairedAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true, config: jobs.Config{RescueStuckJobsAfter: time.Hour}})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "How does sync.WaitGroup work?"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE river_job SET state = 'completed', attempt = 1,
		attempted_at = now() - interval '4 seconds', finalized_at = now() - interval '3 seconds'
		WHERE args @> jsonb_build_object('run_id', $1::bigint)`, run.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE gb_agent_research_runs SET status = 'working' WHERE id = $1`, run.ID); err != nil {
		t.Fatal(err)
	}
	res, err := b.agent.Maintain(ctx, jobs.MaintainParams{})
	if err != nil || res.Repaired != 1 {
		t.Fatalf("maintain: %+v %v; want one run repaired", res, err)
	}
	if got := jobStates(t, b.pool, run.ID); len(got) != 2 || got[1] != "available:0" {
		t.Fatalf("step jobs %v; want the completed one and a new available one", got)
	}
}

func TestParkedParentThatLostItsResumeIsResumed(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	kid, err := b.agent.SpawnForTest(ctx, root.ID, jobs.SpawnParams{Name: "kid", Reason: "covers a part", Task: "find it"})
	if err != nil {
		t.Fatal(err)
	}
	// The root parked and its sub-agent ended without resuming it, and no
	// job is left for either.
	for _, q := range []string{
		`UPDATE gb_agent_research_runs SET status = 'waiting', state = 'waiting', steps = 1, wait_call_id = 'c1' WHERE id = $1 AND $2::bigint > 0`,
		`UPDATE gb_agent_research_runs SET status = 'succeeded', report = 'found it', ended_at = now() - interval '1 minute' WHERE id = $2 AND $1::bigint > 0`,
		`DELETE FROM river_job WHERE $1::bigint > 0 AND $2::bigint > 0`,
	} {
		if _, err := b.pool.Exec(ctx, q, root.ID, kid.ID); err != nil {
			t.Fatal(err)
		}
	}
	res, err := b.agent.Maintain(ctx, jobs.MaintainParams{})
	if err != nil || res.Resumed != 1 {
		t.Fatalf("maintain: %+v %v", res, err)
	}
	r, _ := jobs.GetRun(ctx, b.pool, root.ID)
	if r.Status != jobs.StatusWorking {
		t.Fatalf("root %s", r.Status)
	}
	if got := jobStates(t, b.pool, root.ID); len(got) != 1 || got[0] != "available:0" {
		t.Fatalf("resume job %v", got)
	}
	if countEvents(t, b.pool, root.ID, jobs.EventResumed) != 1 || countEvents(t, b.pool, root.ID, jobs.EventRepaired) != 1 {
		t.Fatal("resume and repair not recorded")
	}
	if res, err = b.agent.Maintain(ctx, jobs.MaintainParams{}); err != nil || res.Resumed != 0 {
		t.Fatalf("second maintain resumed again: %+v %v", res, err)
	}
}

// TestCancellingASubagentCancelsItsModelCall: a parent cancels a sub-agent
// that is in its model call. The call's context ends because its job was
// cancelled (not by a time-out or the worker stopping), and the job ends
// cancelled.
func TestCancellingASubagentCancelsItsModelCall(t *testing.T) {
	t.Parallel()
	inCall := make(chan struct{})
	var cause atomic.Pointer[error]
	model := &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		if topic(req) == "slow part" {
			close(inCall)
			<-ctx.Done()
			c := context.Cause(ctx)
			cause.Store(&c)
			return llm.Message{}, ctx.Err()
		}
		switch turns(req) {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("spawn_subagent",
				`{"name":"slow","reason":"covers the slow part","task":"slow part"}`)}}, nil
		case 1:
			<-inCall
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("cancel_subagent", `{"name":"slow"}`)}}, nil
		default:
			return llm.Message{Content: "done"}, nil
		}
	}}
	b := setup(t, setupOpts{model: model})
	root, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, root.ID, 30*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	waitFor(t, 30*time.Second, "the sub-agent's call to stop", func() bool { return cause.Load() != nil })
	if c := *cause.Load(); !errors.Is(c, rivertype.ErrJobCancelledRemotely) {
		t.Fatalf("the sub-agent's model call ended with cause %v; want its job cancelled by the parent's cancel", c)
	}
	tree, _ := jobs.Tree(context.Background(), b.pool, root.ID)
	waitFor(t, 30*time.Second, "the sub-agent's job to be cancelled", func() bool {
		got := jobStates(t, b.pool, tree[1].ID)
		return len(got) == 1 && strings.HasPrefix(got[0], "cancelled")
	})
}

func TestDeleteWakesAWaitingReaderAndLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	msgr := withMessenger(t, pool)
	var talkerCause atomic.Pointer[error]
	talking := make(chan struct{})
	var talkOnce sync.Once
	model := &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		switch topic(req) {
		case "listen":
			if turns(req) <= 1 { // reads the talker's word (at once or woken by it), then parks again
				return llm.Message{ToolCalls: []llm.ToolCall{toolCall("read_messages", `{"wait_seconds":60}`)}}, nil
			}
			<-ctx.Done()
			return llm.Message{}, ctx.Err()
		case "talk":
			if turns(req) == 0 {
				return llm.Message{ToolCalls: []llm.ToolCall{toolCall("send_message", `{"to":"listener","text":"hello"}`)}}, nil
			}
			talkOnce.Do(func() { close(talking) })
			<-ctx.Done() // in its model call when the tree is deleted
			c := context.Cause(ctx)
			talkerCause.Store(&c)
			return llm.Message{}, ctx.Err()
		}
		if turns(req) == 0 {
			return llm.Message{ToolCalls: []llm.ToolCall{
				toolCall("spawn_subagent", `{"name":"talker","reason":"says hello","task":"talk"}`),
				toolCall("spawn_subagent", `{"name":"listener","reason":"waits for a word","task":"listen"}`)}}, nil
		}
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
	}}
	b := setupOn(t, pool, setupOpts{model: model, msgr: msgr})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the listener to park on its inbox", func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_runs WHERE name = 'listener' AND steps = 2 AND status = 'waiting'`).Scan(&n)
		return n == 1
	})
	select {
	case <-talking:
	case <-time.After(20 * time.Second):
		t.Fatal("the talker never made its second model call")
	}
	var talker, listener int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT id FROM gb_agent_research_runs WHERE name = 'talker'),
		(SELECT id FROM gb_agent_research_runs WHERE name = 'listener')`).Scan(&talker, &listener); err != nil {
		t.Fatal(err)
	}
	if err := b.agent.Delete(ctx, b.userID, root.ID); err != nil {
		t.Fatal(err)
	}
	// The listener's wake job is scheduled a minute out: only the delete
	// can end it within this guard.
	waitFor(t, 30*time.Second, "every job of the tree to end", func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE finalized_at IS NULL`).Scan(&n)
		return n == 0
	})
	jobState := func(kind string, runID int64) []string {
		rows, err := pool.Query(ctx, `SELECT state::text FROM river_job
			WHERE kind = $1 AND args @> jsonb_build_object('run_id', $2::bigint) ORDER BY id`, kind, runID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// The parked listener's wait was ended by the delete, not by its
	// deadline; the talker's step, in its model call, was cancelled.
	// (A first wait may have been ended by the talker's word, its wake
	// job cancelled then.)
	if got := jobState(jobs.MessageWakeKind, listener); len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return s != "cancelled" }) {
		t.Errorf("the listener's wake jobs: %v; want each cancelled, the last by the delete", got)
	}
	if got := jobState(jobs.StepKind, talker); len(got) != 1 || got[0] != "cancelled" {
		t.Errorf("the talker's step jobs: %v; want the one cancelled by the delete", got)
	}
	var cause error
	if c := talkerCause.Load(); c != nil {
		cause = *c
	}
	if !errors.Is(cause, rivertype.ErrJobCancelledRemotely) {
		t.Errorf("the talker's model call ended with cause %v; want its job cancelled by the delete", cause)
	}
	var other int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'cancelled')`).Scan(&other); err != nil || other != 0 {
		t.Errorf("%d jobs ended neither completed nor cancelled (%v)", other, err)
	}
	for _, table := range []string{"gb_agent_research_runs", "gb_agent_research_steps", "gb_agent_research_states",
		"gb_agent_research_events", "gb_inboxes", "gb_messages", "gb_model_calls"} {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s has %d rows left after the delete", table, n)
		}
	}
}
