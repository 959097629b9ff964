package jobs_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// stepKey names one step of one run, or one hop of one River chain.
type stepKey struct {
	id   int64
	step int
}

// stepTimes is a jobs.Observer that records when each step starts and
// commits. River benchmark workers record into it the same way, with the
// chain number as the id and the hop as the step.
type stepTimes struct {
	mu        sync.Mutex
	started   map[stepKey]time.Time
	committed map[stepKey]time.Time
	// onCommit, when set before any step runs, is called after a commit is
	// recorded, outside the lock.
	onCommit func(id int64, step int)
}

func newStepTimes() *stepTimes {
	return &stepTimes{started: map[stepKey]time.Time{}, committed: map[stepKey]time.Time{}}
}

func (s *stepTimes) StepStarted(id int64, step int, at time.Time) {
	s.mu.Lock()
	s.started[stepKey{id, step}] = at
	s.mu.Unlock()
}

func (s *stepTimes) StepCommitted(id int64, step int, at time.Time) {
	s.mu.Lock()
	s.committed[stepKey{id, step}] = at
	s.mu.Unlock()
	if s.onCommit != nil {
		s.onCommit(id, step)
	}
}

// reset forgets every recorded time.
func (s *stepTimes) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.started)
	clear(s.committed)
}

func (s *stepTimes) commits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.committed)
}

func (s *stepTimes) startedAt(id int64, step int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.started[stepKey{id, step}]
	return t, ok
}

func (s *stepTimes) committedAt(id int64, step int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.committed[stepKey{id, step}]
	return t, ok
}

// chainStats are the timings of a set of runs (or chains) of steps.
type chainStats struct {
	steps      int             // committed steps
	wall       time.Duration   // from begin to the last commit
	work       []time.Duration // StepStarted -> StepCommitted of each step
	pickup     []time.Duration // StepCommitted of step n -> StepStarted of step n+1
	lastCommit time.Time
}

func (c chainStats) perSecond() float64 {
	if c.wall <= 0 {
		return 0
	}
	return float64(c.steps) / c.wall.Seconds()
}

// stats gathers the timings of everything recorded since begin.
func (s *stepTimes) stats(begin time.Time) chainStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c chainStats
	for k, done := range s.committed {
		c.steps++
		if done.After(c.lastCommit) {
			c.lastCommit = done
		}
		if st, ok := s.started[k]; ok {
			c.work = append(c.work, done.Sub(st))
		}
		if next, ok := s.started[stepKey{k.id, k.step + 1}]; ok {
			c.pickup = append(c.pickup, next.Sub(done))
		}
	}
	c.wall = c.lastCommit.Sub(begin)
	return c
}

// pct is the p-th percentile (0 < p <= 1) of ds by nearest rank.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// ms renders a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waitFor polls cond until it holds or within passes.
func waitFor(b testing.TB, within time.Duration, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// quietLogger drops River's and the agent's info logs, which would
// otherwise be written to stderr in the middle of the measurements.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// benchAgent starts a working agent on pool with the default config,
// stopped when the benchmark ends.
func benchAgent(b testing.TB, pool *pgxpool.Pool, model llm.Model, obs jobs.Observer) *jobs.Agent {
	b.Helper()
	a, err := jobs.New(jobs.Deps{Pool: pool, Model: model, Work: true, Observer: obs, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Stop(ctx)
	})
	return a
}

// benchDocs loads a few small Go packages' docs as the default dataset.
func benchDocs(b testing.TB, pool *pgxpool.Pool) {
	b.Helper()
	src := filepath.Join(runtime.GOROOT(), "src")
	var paths []string
	for _, p := range []string{"context", "errors", "sync", "time"} {
		paths = append(paths, filepath.Join(src, p))
	}
	docs, err := kb.FromPaths(paths)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := kb.Load(context.Background(), pool, jobs.DefaultDataset, docs); err != nil {
		b.Fatal(err)
	}
}

// benchUsers creates n users and returns their ids: a user may have only
// jobs.MaxWorkingPerUser roots working at once.
func benchUsers(b testing.TB, pool *pgxpool.Pool, n int) []int64 {
	b.Helper()
	ctx := context.Background()
	ids := make([]int64, n)
	for i := range ids {
		name := fmt.Sprintf("bench%d", i)
		if _, err := jobs.CreateKey(ctx, pool, name); err != nil {
			b.Fatal(err)
		}
		id, err := jobs.UserID(ctx, pool, name)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

// riverClient makes a River client that works only queue, with workers,
// on its own so that it never takes the agent's step jobs. cooldown 0
// leaves River's default FetchCooldown.
func riverClient(b testing.TB, pool *pgxpool.Pool, queue string, workers *river.Workers,
	cooldown, poll time.Duration) *river.Client[pgx.Tx] {
	b.Helper()
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:                "gb-bench-" + queue,
		Workers:           workers,
		Queues:            map[string]river.QueueConfig{queue: {MaxWorkers: jobs.MaxWorkersDefault}},
		FetchCooldown:     cooldown,
		FetchPollInterval: poll,
		Logger:            quietLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { // a no-op when the benchmark stopped it already
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	return c
}

// chainArgs is one hop of a bare River chain: a job whose only work is to
// insert its successor and complete itself in one transaction.
type chainArgs struct {
	Chain int64 `json:"chain"`
	Hop   int   `json:"hop"`
	Hops  int   `json:"hops"`
}

func (chainArgs) Kind() string { return "gb_bench_chain" }

type chainWorker struct {
	river.WorkerDefaults[chainArgs]
	pool  *pgxpool.Pool
	times *stepTimes
}

func (w *chainWorker) Work(ctx context.Context, job *river.Job[chainArgs]) error {
	w.times.StepStarted(job.Args.Chain, job.Args.Hop, time.Now())
	client := river.ClientFromContext[pgx.Tx](ctx)
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if job.Args.Hop < job.Args.Hops {
			next := job.Args
			next.Hop++
			if _, err := client.InsertTx(ctx, tx, next, &river.InsertOpts{Queue: job.Queue}); err != nil {
				return err
			}
		}
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err != nil {
		return err
	}
	w.times.StepCommitted(job.Args.Chain, job.Args.Hop, time.Now())
	return nil
}

// runChains runs chains River chains of hops jobs each on a client of its
// own and returns their timings.
func runChains(b testing.TB, pool *pgxpool.Pool, queue string, chains, hops int, cooldown, poll time.Duration) chainStats {
	b.Helper()
	ctx := context.Background()
	times := newStepTimes()
	workers := river.NewWorkers()
	river.AddWorker(workers, &chainWorker{pool: pool, times: times})
	client := riverClient(b, pool, queue, workers, cooldown, poll)
	// Let the client's fetch loop and listener settle before timing.
	time.Sleep(200 * time.Millisecond)
	begin := time.Now()
	for i := 0; i < chains; i++ {
		if _, err := client.Insert(ctx, chainArgs{Chain: int64(i), Hop: 1, Hops: hops}, &river.InsertOpts{Queue: queue}); err != nil {
			b.Fatal(err)
		}
	}
	waitFor(b, 60*time.Second, "river chains", func() bool { return times.commits() == chains*hops })
	st := times.stats(begin)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(sctx); err != nil {
		b.Fatal(err)
	}
	return st
}

// pingArgs is a job that does nothing; its worker records when it starts.
type pingArgs struct {
	Seq int `json:"seq"`
}

func (pingArgs) Kind() string { return "gb_bench_ping" }

type pingWorker struct {
	river.WorkerDefaults[pingArgs]
	mu      sync.Mutex
	started map[int]time.Time
}

func (w *pingWorker) Work(_ context.Context, job *river.Job[pingArgs]) error {
	now := time.Now()
	w.mu.Lock()
	w.started[job.Args.Seq] = now
	w.mu.Unlock()
	return nil
}

// insertToStart inserts n jobs one at a time, every gap, with a client's
// Insert (its own transaction) and returns the latencies from the insert's
// return to the worker's start.
func insertToStart(b testing.TB, pool *pgxpool.Pool, queue string, n int, gap time.Duration) []time.Duration {
	b.Helper()
	ctx := context.Background()
	w := &pingWorker{started: map[int]time.Time{}}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client := riverClient(b, pool, queue, workers, jobs.FetchCooldownDefault, jobs.FetchPollDefault)
	time.Sleep(200 * time.Millisecond)
	inserted := make([]time.Time, n)
	for i := 0; i < n; i++ {
		if _, err := client.Insert(ctx, pingArgs{Seq: i}, &river.InsertOpts{Queue: queue}); err != nil {
			b.Fatal(err)
		}
		inserted[i] = time.Now()
		time.Sleep(gap)
	}
	waitFor(b, 30*time.Second, "ping jobs", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.started) == n
	})
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(sctx); err != nil {
		b.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = w.started[i].Sub(inserted[i])
	}
	return out
}
