package jobs_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// drainBundle is a working agent that is not started: Drain starts it.
type drainBundle struct {
	pool  *pgxpool.Pool
	agent *jobs.Service
	users []int64
}

func newDrainBundle(t *testing.T, model llm.Model, cfg jobs.Config) *drainBundle {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	loadDocs(t, pool)
	a, err := jobs.New(jobs.Deps{Pool: pool, Model: model, Config: cfg, Work: true})
	if err != nil {
		t.Fatal(err)
	}
	b := &drainBundle{pool: pool, agent: a}
	for _, name := range []string{"ann", "bob"} {
		if _, err := jobs.CreateKey(ctx, pool, name); err != nil {
			t.Fatal(err)
		}
		id, err := jobs.UserID(ctx, pool, name)
		if err != nil {
			t.Fatal(err)
		}
		b.users = append(b.users, id)
	}
	return b
}

func (b *drainBundle) start(t *testing.T, user int64, topic string) *jobs.Run {
	t.Helper()
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: user, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

type jobState struct {
	State   string
	Attempt int
	Errors  int
}

func (b *drainBundle) jobsOf(t *testing.T) []jobState {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		"SELECT state::text, attempt, coalesce(array_length(errors, 1), 0) FROM river_job ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []jobState
	for rows.Next() {
		var s jobState
		if err := rows.Scan(&s.State, &s.Attempt, &s.Errors); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// interruptions lists the count of deadline interruptions in a row of
// each job, by id.
func (b *drainBundle) interruptions(t *testing.T) []int {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT coalesce((metadata->>$1)::int, 0)
		FROM river_job ORDER BY id`, jobs.InterruptionsKey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// requireNoListener fails when a LISTEN connection stays open on the test
// database after the River client stopped.
func requireNoListener(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'listen%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d LISTEN connections still open after the drain", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDrainReturnsIdleOnAnEmptyQueue: with nothing queued, the drain ends
// because it found the queue idle, not at its deadline, and leaves
// nothing listening.
func TestDrainReturnsIdleOnAnEmptyQueue(t *testing.T) {
	t.Parallel()
	b := newDrainBundle(t, &offline.Model{}, jobs.Config{})
	// Ending by this guard would make the reason "cancelled".
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	res, err := b.agent.Drain(ctx, jobs.DrainParams{CancelAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("idle drain took %s", time.Since(began))
	if res.Reason != jobs.DrainIdle || res.Worked != 0 || res.Interrupted != 0 || res.Ready != 0 {
		t.Fatalf("empty queue: %+v; want an idle drain that worked nothing", res)
	}
	requireNoListener(t, b.pool)
}

func TestDrainWorksUntilIdleAndRestarts(t *testing.T) {
	t.Parallel()
	// A step must fit before CancelAt to start: StepTimeout, until there
	// are samples of how long steps take.
	b := newDrainBundle(t, &offline.Model{}, jobs.Config{StepTimeout: 30 * time.Second})
	ctx := context.Background()
	// A first drain with nothing to do, so the second one restarts the client.
	if _, err := b.agent.Drain(ctx, jobs.DrainParams{CancelAt: time.Now().Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	r1 := b.start(t, b.users[0], "How does the context package carry cancellation signals?")
	r2 := b.start(t, b.users[1], "What does sync.WaitGroup wait for?")
	res, err := b.agent.Drain(ctx, jobs.DrainParams{CancelAt: time.Now().Add(60 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != jobs.DrainIdle || res.Interrupted != 0 {
		t.Fatalf("drain: %+v", res)
	}
	for _, id := range []int64{r1.ID, r2.ID} {
		run, err := jobs.GetRun(ctx, b.pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != jobs.StatusSucceeded {
			t.Fatalf("run %d: status %s error %q", id, run.Status, run.Error)
		}
	}
	t.Logf("drain: %+v", res)
	if res.Worked < 2 {
		t.Fatalf("worked %d jobs, want at least one per run", res.Worked)
	}
	for _, j := range b.jobsOf(t) {
		if j.State != "completed" {
			t.Fatalf("job left %s after an idle drain", j.State)
		}
	}
	requireNoListener(t, b.pool)
}

func TestDrainDeadlinePutsRunningJobsBackUncharged(t *testing.T) {
	t.Parallel()
	// The model call ends only when its context does; its steps are
	// expected to be short, so the drain starts it.
	model := newHeldModel()
	b := newDrainBundle(t, model, jobs.Config{})
	b.agent.RecordStepDurationsForTest(model.Name(), 10*time.Millisecond, 5)
	b.start(t, b.users[0], "How does the context package carry cancellation signals?")
	var kicks atomic.Int32
	res, err := b.agent.Drain(context.Background(), jobs.DrainParams{
		StopFetchingAt: time.Now().Add(300 * time.Millisecond),
		CancelAt:       time.Now().Add(600 * time.Millisecond),
		OnBacklog:      func(context.Context) error { kicks.Add(1); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != jobs.DrainDeadline || res.Interrupted != 1 || res.Ready != 1 {
		t.Fatalf("drain: %+v; want it stopped at its deadline with the one job interrupted and ready", res)
	}
	model.requireInterrupted(t, 1)
	if kicks.Load() != 1 || res.Kicks != 1 {
		t.Fatalf("work left at the deadline should wake one worker; kicks %d", kicks.Load())
	}
	got := b.jobsOf(t)
	if len(got) != 1 || got[0] != (jobState{State: "available", Attempt: 0, Errors: 0}) {
		t.Fatalf("interrupted job should be available with no attempt spent: %+v", got)
	}
	if n := b.interruptions(t); len(n) != 1 || n[0] != 1 {
		t.Fatalf("interruptions in a row: %v; want 1 for the job the deadline interrupted", n)
	}
	requireNoListener(t, b.pool)
}

// stubbornModel answers a cancellation with an error that does not say so,
// which River counts as a failed attempt; calls counts the calls made.
type stubbornModel struct{ calls atomic.Int32 }

func (*stubbornModel) Name() string { return "stubborn" }

func (m *stubbornModel) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	m.calls.Add(1)
	<-ctx.Done()
	return llm.Response{}, errors.New("the model gave up")
}

// heldModel holds each call until the call's context ends (for at most a
// minute, so that a call never cancelled fails its step rather than
// hanging the test), and records how its calls ended.
type heldModel struct {
	started chan struct{} // a value for each call that starts, while there is room
	mu      sync.Mutex
	causes  []error // context.Cause of each call its context ended
	expired int     // calls that were never cancelled
}

func newHeldModel() *heldModel { return &heldModel{started: make(chan struct{}, 16)} }

func (m *heldModel) Name() string { return "held" }

func (m *heldModel) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	select {
	case m.started <- struct{}{}:
	default:
	}
	guard := time.NewTimer(time.Minute)
	defer guard.Stop()
	select {
	case <-ctx.Done():
		m.mu.Lock()
		m.causes = append(m.causes, context.Cause(ctx))
		m.mu.Unlock()
		return llm.Response{}, ctx.Err()
	case <-guard.C:
		m.mu.Lock()
		m.expired++
		m.mu.Unlock()
		return llm.Response{}, errors.New("the model call was never cancelled")
	}
}

// requireInterrupted fails unless exactly n calls ended, each because its
// context was cancelled by the worker stopping (not by a time-out).
func (m *heldModel) requireInterrupted(t *testing.T, n int) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.causes) != n || m.expired != 0 {
		t.Fatalf("%d model calls cancelled (causes %v), %d never cancelled; want %d cancelled", len(m.causes), m.causes, m.expired, n)
	}
	for _, c := range m.causes {
		if c == nil || errors.Is(c, context.DeadlineExceeded) {
			t.Fatalf("a model call ended with cause %v; want the drain's cancellation, not a time-out", c)
		}
	}
}

func TestDrainGivesBackAttemptsChargedForCancellation(t *testing.T) {
	t.Parallel()
	m := &stubbornModel{}
	b := newDrainBundle(t, m, jobs.Config{})
	b.agent.RecordStepDurationsForTest(m.Name(), 10*time.Millisecond, 5)
	b.start(t, b.users[0], "How does the context package carry cancellation signals?")
	// The drain must reach its deadline with the step in its model call.
	// A machine too loaded to start the step before the deadline ran
	// nothing (the job is as it was), so the drain is tried again, longer.
	var res jobs.DrainResult
	for window := 300 * time.Millisecond; m.calls.Load() == 0; window *= 2 {
		if window > 20*time.Second {
			t.Fatal("no drain started the step")
		}
		var err error
		res, err = b.agent.Drain(context.Background(), jobs.DrainParams{CancelAt: time.Now().Add(window)})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The step gives its attempt back itself (a snooze), so there is
	// nothing left for the drain to restore.
	if res.Reason != jobs.DrainDeadline || res.Interrupted != 1 {
		t.Fatalf("drain: %+v", res)
	}
	got := b.jobsOf(t)
	if len(got) != 1 || got[0] != (jobState{State: "available", Attempt: 0, Errors: 0}) {
		t.Fatalf("job should be back as it was before the drain: %+v", got)
	}
}

func TestDrainAsksForHelpWhenEverySlotIsBusy(t *testing.T) {
	t.Parallel()
	b := newDrainBundle(t, &offline.Model{Delay: 100 * time.Millisecond}, jobs.Config{MaxWorkers: 1, StepTimeout: 30 * time.Second})
	for i, topic := range []string{"How does the context package carry cancellation signals?",
		"What does sync.WaitGroup wait for?"} {
		b.start(t, b.users[i], topic)
	}
	var kicks atomic.Int32
	res, err := b.agent.Drain(context.Background(), jobs.DrainParams{
		CancelAt:     time.Now().Add(60 * time.Second),
		BacklogAfter: 50 * time.Millisecond,
		OnBacklog:    func(context.Context) error { kicks.Add(1); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != jobs.DrainIdle {
		t.Fatalf("drain: %+v", res)
	}
	if kicks.Load() != 1 {
		t.Fatalf("one worker slot and two runs: want exactly one kick while working, got %d", kicks.Load())
	}
}

func TestMaintainSchedulesRescuesAndCleans(t *testing.T) {
	t.Parallel()
	b := newDrainBundle(t, &offline.Model{}, jobs.Config{StepTimeout: time.Minute, RescueStuckJobsAfter: 2 * time.Minute})
	ctx := context.Background()
	insert := func(step int) int64 {
		t.Helper()
		res, err := b.agent.River().Insert(ctx, jobs.StepArgs{RunID: 424242, Step: step}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Job.ID
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := b.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// "slow" is a live worker (it holds its liveness lock) whose jobs are
	// stuck past the horizon; "gone" is a dead one.
	slow, err := b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Release()
	if _, err := slow.Exec(ctx, "SELECT pg_advisory_lock(7411100, hashtext('slow'))"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = slow.Exec(ctx, "SELECT pg_advisory_unlock_all()") }()
	stuck, dead, fresh, due, old, recent, orphan := insert(1), insert(2), insert(3), insert(4), insert(5), insert(6), insert(7)
	exec(`UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '10 minutes',
		attempted_by = '{slow}' WHERE id = $1`, stuck)
	exec(`UPDATE river_job SET state = 'running', attempt = max_attempts, attempted_at = now() - interval '10 minutes',
		attempted_by = '{slow}' WHERE id = $1`, dead)
	exec(`UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = '{slow}' WHERE id = $1`, fresh)
	exec(`UPDATE river_job SET state = 'retryable', attempt = 1, scheduled_at = now() - interval '1 second' WHERE id = $1`, due)
	exec(`UPDATE river_job SET state = 'completed', attempt = 1, finalized_at = now() - interval '48 hours' WHERE id = $1`, old)
	exec(`UPDATE river_job SET state = 'completed', attempt = 1, finalized_at = now() WHERE id = $1`, recent)
	exec(`UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '5 seconds',
		attempted_by = '{gone}' WHERE id = $1`, orphan)

	// While another process maintains the queue, Maintain stands aside.
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7411000003)"); err != nil {
		t.Fatal(err)
	}
	res, err := b.agent.Maintain(ctx, jobs.MaintainParams{})
	if err != nil || !res.Skipped {
		t.Fatalf("maintain under another's lock: %+v, %v", res, err)
	}
	_ = tx.Rollback(ctx)

	res, err = b.agent.Maintain(ctx, jobs.MaintainParams{})
	if err != nil {
		t.Fatal(err)
	}
	// The stuck job on its last attempt is put back like the other, its
	// attempt given back: a lost worker is not its step's failure.
	want := jobs.MaintainResult{Scheduled: 1, Rescued: 2, Deleted: 1}
	if res != want {
		t.Fatalf("maintain: got %+v, want %+v", res, want)
	}
	state := func(id int64) string {
		var s string
		if err := b.pool.QueryRow(ctx, "SELECT coalesce((SELECT state::text FROM river_job WHERE id = $1), 'deleted')", id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The dead worker is only suspected at first sight: a live one whose
	// lock's connection dropped takes its lock again meanwhile.
	var attempt, most int
	if err := b.pool.QueryRow(ctx, "SELECT attempt, max_attempts FROM river_job WHERE id = $1", dead).Scan(&attempt, &most); err != nil {
		t.Fatal(err)
	}
	if attempt != most-1 {
		t.Errorf("the stuck job on its last attempt is at attempt %d of %d, want %d (its lost attempt given back)", attempt, most, most-1)
	}
	for id, want := range map[int64]string{stuck: "retryable", dead: "retryable", fresh: "running",
		due: "available", old: "deleted", recent: "completed", orphan: "running"} {
		if got := state(id); got != want {
			t.Errorf("job %d: state %s, want %s", id, got, want)
		}
	}
	// A rescued job becomes due on River's retry schedule; the next pass
	// makes it available.
	exec(`UPDATE river_job SET scheduled_at = now() - interval '1 second' WHERE id = $1`, stuck)
	if res, err = b.agent.Maintain(ctx, jobs.MaintainParams{}); err != nil || res.Scheduled != 1 {
		t.Fatalf("second maintain: %+v, %v", res, err)
	}
	if got := state(stuck); got != "available" {
		t.Fatalf("rescued job: state %s, want available", got)
	}
	// Still without its lock a while later, the worker is dead: its job
	// goes back to the queue at once.
	time.Sleep(jobs.LivenessConfirm)
	if res, err = b.agent.Maintain(ctx, jobs.MaintainParams{}); err != nil || res.DeadWorkers != 1 || res.Rescued != 1 {
		t.Fatalf("third maintain: %+v, %v", res, err)
	}
	if got := state(orphan); got != "available" {
		t.Fatalf("dead worker's job: state %s, want available", got)
	}
}

// TestDrainStopsWhenItsContextEnds: the caller's context ends while a step
// is in its model call, far from the drain's deadline. The drain stops for
// that reason, cancels the call and puts the job back uncharged.
func TestDrainStopsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	model := newHeldModel()
	b := newDrainBundle(t, model, jobs.Config{})
	b.agent.RecordStepDurationsForTest(model.Name(), 10*time.Millisecond, 5)
	b.start(t, b.users[0], "How does the context package carry cancellation signals?")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-model.started:
		case <-time.After(30 * time.Second): // the step never called the model: the checks below fail
		}
		cancel()
	}()
	// A drain that missed the end of its context would stop at this
	// deadline instead, with another reason.
	res, err := b.agent.Drain(ctx, jobs.DrainParams{CancelAt: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != jobs.DrainCancelled || res.Interrupted != 1 {
		t.Fatalf("drain: %+v; want it stopped by its context with the one job interrupted", res)
	}
	model.requireInterrupted(t, 1)
	if got := b.jobsOf(t); len(got) != 1 || got[0] != (jobState{State: "available"}) {
		t.Fatalf("job should be available with no attempt spent: %+v", got)
	}
	if n := b.interruptions(t); n[0] != 0 {
		t.Fatalf("interruptions in a row: %v; the caller's cancellation is not a deadline's", n)
	}
}

// The queue's delay a drain reports is the age of the step job that has
// waited longest: since it was queued, or since it came due again.
func TestOldestReadyIsTheQueuesDelay(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	if s, err := b.agent.OldestReady(ctx); err != nil || s != 0 {
		t.Fatalf("empty queue: %v, %v; want 0", s, err)
	}
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	// Queued ten minutes ago (its scheduled_at is its tree's start, older still).
	if _, err := b.pool.Exec(ctx, `UPDATE river_job SET created_at = now() - interval '10 minutes',
		scheduled_at = now() - interval '20 minutes' WHERE (args->>'run_id')::bigint = $1`, run.ID); err != nil {
		t.Fatal(err)
	}
	if s, err := b.agent.OldestReady(ctx); err != nil || s < 599 || s > 700 {
		t.Fatalf("a job queued 10 minutes ago: %v s, %v; want about 600", s, err)
	}
	// Due again 2 minutes ago after a snooze: it has waited since then.
	if _, err := b.pool.Exec(ctx, `UPDATE river_job SET scheduled_at = now() - interval '2 minutes'
		WHERE (args->>'run_id')::bigint = $1`, run.ID); err != nil {
		t.Fatal(err)
	}
	if s, err := b.agent.OldestReady(ctx); err != nil || s < 119 || s > 200 {
		t.Fatalf("a job due again 2 minutes ago: %v s, %v; want about 120", s, err)
	}
}
