package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/gbresearch/gb/infra/dbtest"
)

// These tests pin the River behaviour that river_internals.go relies on.
// When one fails after a River upgrade, the function it names is to be
// checked again: changed, or removed when River now does its work.

// probeArgs are the arguments of the jobs these tests run. Answer says how
// the work answers the cancellation of a stopping client: "cancellation"
// returns the context's error, "error" another error.
type probeArgs struct {
	Answer string `json:"answer"`
}

func (probeArgs) Kind() string { return "gb_test_river_probe" }

// probeWorker tells which jobs start, then waits for its context to end
// unless its job's Answer is empty.
type probeWorker struct {
	river.WorkerDefaults[probeArgs]
	started chan int64
}

func (w *probeWorker) Work(ctx context.Context, job *river.Job[probeArgs]) error {
	w.started <- job.ID
	if job.Args.Answer == "" {
		return nil
	}
	<-ctx.Done() // the stop's cancellation, or at worst River's JobTimeout
	if job.Args.Answer == "error" {
		return errors.New("the work gave up")
	}
	return ctx.Err()
}

// probeBundle is a bare River client on a database of its own, working
// one job at a time with probeWorker.
type probeBundle struct {
	pool    *pgxpool.Pool
	client  *river.Client[pgx.Tx]
	started chan int64
}

func newProbeBundle(t *testing.T) *probeBundle {
	t.Helper()
	pool := dbtest.NewPool(t)
	b := &probeBundle{pool: pool, started: make(chan int64, 16)}
	workers := river.NewWorkers()
	river.AddWorker(workers, &probeWorker{started: b.started})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:   slog.New(slog.DiscardHandler),
		Queues:   map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}},
		TestOnly: true,
		Workers:  workers,
	})
	if err != nil {
		t.Fatal(err)
	}
	b.client = client
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.StopAndCancel(ctx)
	})
	return b
}

func (b *probeBundle) insert(t *testing.T, answer string, opts *river.InsertOpts) int64 {
	t.Helper()
	res, err := b.client.Insert(context.Background(), probeArgs{Answer: answer}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res.Job.ID
}

func (b *probeBundle) job(t *testing.T, id int64) *rivertype.JobRow {
	t.Helper()
	job, err := b.client.JobGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

func (b *probeBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := b.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// nextStarted waits for the next job to start.
func (b *probeBundle) nextStarted(t *testing.T) int64 {
	t.Helper()
	select {
	case id := <-b.started:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no job started")
		return 0
	}
}

// stopWhileRunning starts the client, waits for its one job to run, notes
// what the job had spent, and stops the client with StopAndCancel, as a
// drain at its deadline does.
func (b *probeBundle) stopWhileRunning(t *testing.T, id int64) heldJob {
	t.Helper()
	ctx := context.Background()
	if err := b.client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.nextStarted(t); got != id {
		t.Fatalf("job %d started, want %d", got, id)
	}
	running := b.job(t, id)
	held := heldJob{ID: id, Attempt: running.Attempt, Errors: len(running.Errors)}
	if running.State != rivertype.JobStateRunning || held.Attempt != 1 || held.Errors != 0 {
		t.Fatalf("job under way: %s, attempt %d, %d errors; want running, 1, 0", running.State, held.Attempt, held.Errors)
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.client.StopAndCancel(sctx); err != nil {
		t.Fatal(err)
	}
	return held
}

// TestRiverIsTheVersionChecked fails when go.mod requires another version
// of River's modules, so that river_internals.go is checked against it.
func TestRiverIsTheVersionChecked(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for line := range strings.Lines(string(mod)) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		// River's own modules, not rivercontrib's (versioned apart).
		if len(f) < 2 || f[0] != "github.com/riverqueue/river" && !strings.HasPrefix(f[0], "github.com/riverqueue/river/") {
			continue
		}
		found++
		if f[1] != riverCheckedVersion {
			t.Errorf("go.mod requires %s %s but river_internals.go was checked against %s: check each of its "+
				"functions against the new version (CHANGELOG, driver queries, client stop), then update riverCheckedVersion",
				f[0], f[1], riverCheckedVersion)
		}
	}
	if found == 0 {
		t.Fatal("go.mod requires no River module")
	}
}

// TestRiverRestoresAJobItsStoppingClientCancels: a job whose work returns
// the cancellation of a stopping client is made available by River itself
// with the attempt it had before and no new error, so putBackCancelled
// finds nothing to do for it.
func TestRiverRestoresAJobItsStoppingClientCancels(t *testing.T) {
	t.Parallel()
	b := newProbeBundle(t)
	id := b.insert(t, "cancellation", nil)
	held := b.stopWhileRunning(t, id)
	job := b.job(t, id)
	if job.State != rivertype.JobStateAvailable || job.Attempt != 0 || len(job.Errors) != 0 {
		t.Fatalf("job cancelled by the stop: %s, attempt %d, %d errors; River used to make it available, "+
			"attempt 0, no error: check putBackCancelled and the step worker's snooze", job.State, job.Attempt, len(job.Errors))
	}
	n, err := putBackCancelled(context.Background(), b.pool, b.client.ID(), []heldJob{held})
	if err != nil || n != 0 {
		t.Fatalf("putBackCancelled on a job River put back: %d changed, %v; want 0", n, err)
	}
}

// TestRiverChargesAJobThatAnswersAStopWithAnotherError: a job whose work
// answers the stop's cancellation with another error keeps its attempt and
// gets the error, as any failed attempt; putBackCancelled gives both back.
// When this fails because River restores the job itself, putBackCancelled
// can go.
func TestRiverChargesAJobThatAnswersAStopWithAnotherError(t *testing.T) {
	t.Parallel()
	b := newProbeBundle(t)
	id := b.insert(t, "error", nil)
	held := b.stopWhileRunning(t, id)
	job := b.job(t, id)
	if job.Attempt == 0 && len(job.Errors) == 0 {
		t.Fatalf("River now restores a job that answers a stop with another error (%s): putBackCancelled can go", job.State)
	}
	if job.State == rivertype.JobStateRunning || job.Attempt != 1 || len(job.Errors) != 1 {
		t.Fatalf("job that answered the stop with an error: %s, attempt %d, %d errors; want settled, 1, 1",
			job.State, job.Attempt, len(job.Errors))
	}
	n, err := putBackCancelled(context.Background(), b.pool, b.client.ID(), []heldJob{held})
	if err != nil || n != 1 {
		t.Fatalf("putBackCancelled: %d changed, %v; want 1", n, err)
	}
	job = b.job(t, id)
	if job.State != rivertype.JobStateAvailable || job.Attempt != 0 || len(job.Errors) != 0 || job.FinalizedAt != nil {
		t.Fatalf("job put back: %s, attempt %d, %d errors, finalized %v; want available, 0, 0, not finalized",
			job.State, job.Attempt, len(job.Errors), job.FinalizedAt)
	}
}

// TestRiverRescueSettlesOnlyStuckRunningJobs: rescueRunning gives each
// stuck running job the state, schedule and finalization Maintain chose,
// appends its error and leaves its attempt; a job that started after the
// horizon, or that is no longer running, is left alone.
func TestRiverRescueSettlesOnlyStuckRunningJobs(t *testing.T) {
	t.Parallel()
	b := newProbeBundle(t)
	ctx := context.Background()
	stuck, last, fresh, done := b.insert(t, "", nil), b.insert(t, "", nil), b.insert(t, "", nil), b.insert(t, "", nil)
	step := b.insert(t, "", nil)
	b.exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '10 minutes',
		attempted_by = '{gone}' WHERE id = ANY($1)`, []int64{stuck, step})
	b.exec(t, `UPDATE river_job SET state = 'running', attempt = max_attempts, attempted_at = now() - interval '10 minutes',
		attempted_by = '{gone}' WHERE id = $1`, last)
	b.exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = '{busy}' WHERE id = $1`, fresh)
	b.exec(t, `UPDATE river_job SET state = 'completed', attempt = 1, attempted_at = now() - interval '10 minutes',
		finalized_at = now() WHERE id = $1`, done)

	at := time.Now().UTC().Truncate(time.Microsecond)
	next := at.Add(time.Hour)
	errData := []byte(`{"at":"` + at.Format(time.RFC3339Nano) + `","attempt":1,"error":"rescued: gone"}`)
	settle := []rescuedJob{
		{ID: stuck, Error: errData, ScheduledAt: next, State: rivertype.JobStateRetryable},
		{ID: last, Error: errData, FinalizedAt: &at, ScheduledAt: at, State: rivertype.JobStateDiscarded},
		{ID: fresh, Error: errData, ScheduledAt: next, State: rivertype.JobStateRetryable},
		{ID: done, Error: errData, ScheduledAt: next, State: rivertype.JobStateRetryable},
		{ID: step, Error: errData, ScheduledAt: next, State: rivertype.JobStateRetryable, Step: 3, Rescues: 2},
	}
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		return rescueRunning(ctx, b.client, tx, settle, at.Add(-time.Minute))
	})
	if err != nil {
		t.Fatal(err)
	}
	j := b.job(t, stuck)
	if j.State != rivertype.JobStateRetryable || j.Attempt != 1 || len(j.Errors) != 1 ||
		j.Errors[0].Error != "rescued: gone" || !j.ScheduledAt.Equal(next) || j.FinalizedAt != nil {
		t.Fatalf("stuck job: %s, attempt %d, errors %+v, scheduled %s, finalized %v; want retryable, 1, the rescue's, %s, nil",
			j.State, j.Attempt, j.Errors, j.ScheduledAt, j.FinalizedAt, next)
	}
	// A step job put back gets its attempt back and keeps its rescues.
	j = b.job(t, step)
	var meta struct {
		Step    int `json:"gb:rescued_step"`
		Rescues int `json:"gb:rescues"`
	}
	if err := json.Unmarshal(j.Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	if j.State != rivertype.JobStateRetryable || j.Attempt != 0 || meta.Step != 3 || meta.Rescues != 2 {
		t.Fatalf("rescued step job: %s, attempt %d, metadata %s; want retryable, 0, step 3 rescued twice",
			j.State, j.Attempt, j.Metadata)
	}
	j = b.job(t, last)
	if j.State != rivertype.JobStateDiscarded || j.Attempt != j.MaxAttempts || len(j.Errors) != 1 ||
		j.FinalizedAt == nil || !j.FinalizedAt.Equal(at) {
		t.Fatalf("stuck job on its last attempt: %s, attempt %d of %d, %d errors, finalized %v; want discarded at %s",
			j.State, j.Attempt, j.MaxAttempts, len(j.Errors), j.FinalizedAt, at)
	}
	if j = b.job(t, fresh); j.State != rivertype.JobStateRunning || j.Attempt != 1 || len(j.Errors) != 0 {
		t.Fatalf("job running since after the horizon: %s, attempt %d, %d errors; want left running", j.State, j.Attempt, len(j.Errors))
	}
	if j = b.job(t, done); j.State != rivertype.JobStateCompleted || len(j.Errors) != 0 {
		t.Fatalf("completed job: %s, %d errors; want left completed", j.State, len(j.Errors))
	}
}

// TestRiverScheduleMakesOnlyDueJobsAvailable: scheduleDueJobs makes due
// scheduled and retryable jobs available, attempt unchanged, and leaves
// the others.
func TestRiverScheduleMakesOnlyDueJobsAvailable(t *testing.T) {
	t.Parallel()
	b := newProbeBundle(t)
	ctx := context.Background()
	later := &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)}
	due, retry, notYet := b.insert(t, "", later), b.insert(t, "", later), b.insert(t, "", later)
	b.exec(t, `UPDATE river_job SET scheduled_at = now() - interval '1 second' WHERE id = $1`, due)
	b.exec(t, `UPDATE river_job SET state = 'retryable', attempt = 1, scheduled_at = now() - interval '1 second' WHERE id = $1`, retry)
	var n int
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) (err error) {
		n, err = scheduleDueJobs(ctx, b.client, tx, 10)
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("scheduleDueJobs: %d, %v; want 2", n, err)
	}
	for id, want := range map[int64]rivertype.JobState{due: rivertype.JobStateAvailable,
		retry: rivertype.JobStateAvailable, notYet: rivertype.JobStateScheduled} {
		if j := b.job(t, id); j.State != want {
			t.Errorf("job %d: %s, want %s", id, j.State, want)
		}
	}
	if j := b.job(t, retry); j.Attempt != 1 {
		t.Errorf("due retryable job: attempt %d, want 1 (unchanged)", j.Attempt)
	}
}

// TestRiverFetchesTheEarliestScheduledFirst: a protected job that
// queueFirst moved is the first a client takes, ahead of a job queued
// earlier; a job that is not protected stays where it was.
func TestRiverFetchesTheEarliestScheduledFirst(t *testing.T) {
	t.Parallel()
	b := newProbeBundle(t)
	ctx := context.Background()
	older := b.insert(t, "", nil)
	protected := b.insert(t, "", &river.InsertOpts{Metadata: fmt.Appendf(nil, `{%q: %d}`, InterruptionsKey, ProtectAfter)})
	b.exec(t, `UPDATE river_job SET scheduled_at = now() - interval '1 minute' WHERE id = $1`, older)
	if err := queueFirst(ctx, b.pool, []int64{older, protected}); err != nil {
		t.Fatal(err)
	}
	if j := b.job(t, older); j.ScheduledAt.Year() == 1970 {
		t.Fatal("queueFirst moved a job that is not protected")
	}
	if err := b.client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	first, second := b.nextStarted(t), b.nextStarted(t)
	if first != protected || second != older {
		t.Fatalf("jobs started in the order %d, %d; want the protected %d first, then %d", first, second, protected, older)
	}
}

// TestRiverCancelInABatchAsRiverCancels: queueCancelRunJobs leaves each
// job that is not running as River's JobCancelTx leaves its twin
// (cancelled, finalized, cancel_attempted_at in its metadata), leaves a
// running one running and returns it, and touches neither the job it
// spares nor another run's.
func TestRiverCancelInABatchAsRiverCancels(t *testing.T) {
	t.Parallel()
	b := newProbeBundle(t)
	ctx := context.Background()
	job := func(kind string, run int64, state string) int64 {
		var id int64
		err := b.pool.QueryRow(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at, metadata)
			VALUES (jsonb_build_object('run_id', $2::bigint), $1, 5, 'default', $3, now() + interval '1 hour', '{"k": 1}')
			RETURNING id`, kind, run, state).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	const run, other = 7001, 7002
	scheduled, available := job(TimeoutKind, run, "scheduled"), job(MessageWakeKind, run, "available")
	running, spared, elsewhere := job(StepKind, run, "running"), job(StepKind, run, "available"), job(StepKind, other, "available")
	twin := job(TimeoutKind, run+100, "scheduled")
	var got *[]int64
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		got = queueCancelRunJobs(batch, []string{StepKind, TimeoutKind, MessageWakeKind}, []int64{run}, spared)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		_, err := b.client.JobCancelTx(ctx, tx, twin)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(*got) != 1 || (*got)[0] != running {
		t.Errorf("running jobs returned: %v, want [%d]", *got, running)
	}
	want := b.job(t, twin)
	for _, id := range []int64{scheduled, available} {
		j := b.job(t, id)
		if j.State != want.State || j.FinalizedAt == nil || want.FinalizedAt == nil {
			t.Errorf("job %d: %s, finalized %v; River's cancel: %s, finalized %v", id, j.State, j.FinalizedAt, want.State, want.FinalizedAt)
		}
		var meta, riverMeta map[string]any
		if json.Unmarshal(j.Metadata, &meta) != nil || json.Unmarshal(want.Metadata, &riverMeta) != nil ||
			len(meta) != len(riverMeta) || meta["cancel_attempted_at"] == nil || meta["k"] != riverMeta["k"] {
			t.Errorf("job %d's metadata %s; River's cancel leaves %s", id, j.Metadata, want.Metadata)
		}
	}
	for id, state := range map[int64]rivertype.JobState{running: rivertype.JobStateRunning,
		spared: rivertype.JobStateAvailable, elsewhere: rivertype.JobStateAvailable} {
		if j := b.job(t, id); j.State != state || j.FinalizedAt != nil {
			t.Errorf("job %d: %s, finalized %v; want %s, not finalized", id, j.State, j.FinalizedAt, state)
		}
	}
}
