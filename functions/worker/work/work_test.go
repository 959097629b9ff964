package work_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/functions/worker/work"
	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
)

func TestDeadlines(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	c := work.Config{StepTimeout: 3 * time.Minute, CancelMargin: 2 * time.Second}
	for _, tc := range []struct {
		left, stop, cancel time.Duration
	}{
		// A 15-minute invocation takes jobs for 12 minutes and lets the last
		// ones finish.
		{15 * time.Minute, 15*time.Minute - 2*time.Second - 3*time.Minute, 15*time.Minute - 2*time.Second},
		// A short one works half of its time, then waits for its steps.
		{10 * time.Second, 4 * time.Second, 8 * time.Second},
		// Shorter than two margins: cancel halfway.
		{2 * time.Second, 500 * time.Millisecond, time.Second},
	} {
		stop, cancel := c.Deadlines(now, now.Add(tc.left))
		if stop.Sub(now) != tc.stop || cancel.Sub(now) != tc.cancel {
			t.Errorf("%s left: stop after %s, cancel after %s; want %s and %s", tc.left, stop.Sub(now), cancel.Sub(now), tc.stop, tc.cancel)
		}
	}
}

// fakeListener records its calls and checks that River is stopped when it
// is asked to stop.
type fakeListener struct {
	agent    *jobs.Service
	startErr error
	mu       sync.Mutex
	calls    []string
}

func (l *fakeListener) Start(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, "start")
	return l.startErr
}

func (l *fakeListener) Stop(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.agent.River().Stopped():
		l.calls = append(l.calls, "stop")
	default:
		l.calls = append(l.calls, "stop while River runs")
	}
	return nil
}

// testStepTimeout is the step timeout of the test workers: an invocation
// needs 20 s (work.Config.MinTimeout).
const testStepTimeout = 10 * time.Second

// newWorker returns a worker on a fresh database whose connections are
// named gb-work-test, and a pool of its own on that database to check it.
func newWorker(t *testing.T, l *fakeListener) (*work.Worker, *jobs.Service, *pgxpool.Pool, lambdatest.Seeded) {
	t.Helper()
	url := dbtest.NewURL(t)
	open := func(url string) *pgxpool.Pool {
		pool, err := db.Open(context.Background(), db.PoolConfig{URL: url, MaxConns: 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	pool, check := open(url+"&application_name=gb-work-test"), open(url)
	seed := lambdatest.Seed(t, check)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}, Work: true,
		Config: jobs.Config{StepTimeout: testStepTimeout}})
	if err != nil {
		t.Fatal(err)
	}
	d := work.Deps{Service: agent, Pool: pool, Config: work.Config{StepTimeout: testStepTimeout}}
	if l != nil {
		l.agent = agent
		d.Listener = l
	}
	w, err := work.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return w, agent, check, seed
}

func TestHandleWorksStopsAndCloses(t *testing.T) {
	t.Parallel()
	l := &fakeListener{}
	w, agent, pool, seed := newWorker(t, l)
	ctx := context.Background()
	run, _, err := agent.StartResearch(ctx, jobs.StartParams{UserID: seed.UserID, Topic: "What does sync.Once do?"})
	if err != nil {
		t.Fatal(err)
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := w.Handle(ictx, work.Event{Source: "gb.sweep"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Drain.Reason != jobs.DrainIdle || res.Drain.Worked == 0 || res.ClosedConns == 0 || res.Source != "gb.sweep" {
		t.Fatalf("result %+v", res)
	}
	done, err := jobs.GetRun(ctx, pool, run.ID)
	if err != nil || done.Status != jobs.StatusSucceeded {
		t.Fatalf("run %+v, %v", done, err)
	}
	if got := l.calls; len(got) != 2 || got[0] != "start" || got[1] != "stop" {
		t.Fatalf("listener calls %v, want start then stop after River", got)
	}
	lambdatest.WaitNoBackends(t, pool, "gb-work-test", 2*time.Second)
}

func TestHandleGoesOnWithoutItsListener(t *testing.T) {
	t.Parallel()
	l := &fakeListener{startErr: errors.New("no LISTEN today")}
	w, _, _, _ := newWorker(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := w.Handle(ctx, work.Event{})
	if err != nil || res.Drain.Reason != jobs.DrainIdle || res.Source != "unknown" {
		t.Fatalf("result %+v, %v", res, err)
	}
	if len(l.calls) != 1 {
		t.Fatalf("a listener that did not start must not be stopped: %v", l.calls)
	}
}

func TestCheckTimeout(t *testing.T) {
	t.Parallel()
	c := work.Config{StepTimeout: 3 * time.Minute, CancelMargin: work.CancelMarginDefault}
	if got, want := c.MinTimeout(), 3*time.Minute+work.CancelMarginDefault+work.StartMargin; got != want {
		t.Fatalf("MinTimeout %s, want %s", got, want)
	}
	if err := c.CheckTimeout(c.MinTimeout()); err != nil {
		t.Fatalf("the smallest safe timeout was refused: %v", err)
	}
	err := c.CheckTimeout(60 * time.Second)
	if !errors.Is(err, work.ErrTimeoutTooShort) {
		t.Fatalf("60 s for 3-minute steps: %v; want ErrTimeoutTooShort", err)
	}
	for _, want := range []string{"WorkerTimeout", "GB_STEP_TIMEOUT", "190 seconds"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
}

// TestHandleRefusesATimeoutTooShortForItsSteps: an invocation whose
// timeout cannot hold a step fails at once: its listener does not start
// and its job is left queued as it was.
func TestHandleRefusesATimeoutTooShortForItsSteps(t *testing.T) {
	t.Parallel()
	l := &fakeListener{}
	w, agent, pool, seed := newWorker(t, l)
	ctx := context.Background()
	if _, _, err := agent.StartResearch(ctx, jobs.StartParams{UserID: seed.UserID, Topic: "What does sync.Once do?"}); err != nil {
		t.Fatal(err)
	}
	ictx, cancel := context.WithTimeout(ctx, testStepTimeout+work.CancelMarginDefault)
	defer cancel()
	res, err := w.Handle(ictx, work.Event{Source: "gb.kick"})
	if !errors.Is(err, work.ErrTimeoutTooShort) || res.Drain.Reason != "" {
		t.Fatalf("result %+v, %v; want the invocation refused", res, err)
	}
	if len(l.calls) != 0 {
		t.Fatalf("a refused invocation started its listener: %v", l.calls)
	}
	var state string
	var attempt int
	if err := pool.QueryRow(ctx, "SELECT state::text, attempt FROM river_job").Scan(&state, &attempt); err != nil {
		t.Fatal(err)
	}
	if state != "available" || attempt != 0 {
		t.Fatalf("job %s at attempt %d; want it left available", state, attempt)
	}
}
