package bench

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/gbresearch/gb/jobs"
)

// RiverConfig is a bare River client that works one queue of its own.
type RiverConfig struct {
	// Queue is the client's queue; no other client works it.
	Queue string
	// Cooldown and Poll are River's FetchCooldown and FetchPollInterval;
	// 0 leaves River's defaults.
	Cooldown, Poll time.Duration
	// MaxWorkers is how many jobs it runs at once (jobs.MaxWorkersDefault).
	MaxWorkers int
	// Logger receives River's logs (slog.Default).
	Logger *slog.Logger
}

// settle is how long a new client is left to start its fetch loop and
// listener before it is timed.
const settle = 200 * time.Millisecond

// startClient starts a River client on pool that works c.Queue only. It
// takes no part in leader election, so that it never runs River's
// maintenance for the database's other queues.
func startClient(ctx context.Context, pool *pgxpool.Pool, c RiverConfig, workers *river.Workers) (*river.Client[pgx.Tx], error) {
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:                     "gb-bench-" + c.Queue,
		Workers:                workers,
		Queues:                 map[string]river.QueueConfig{c.Queue: {MaxWorkers: cmp.Or(c.MaxWorkers, jobs.MaxWorkersDefault)}},
		FetchCooldown:          c.Cooldown,
		FetchPollInterval:      c.Poll,
		LeaderElectionDisabled: true,
		Logger:                 cmp.Or(c.Logger, slog.Default()),
	})
	if err != nil {
		return nil, fmt.Errorf("error creating river client: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("error starting river client: %w", err)
	}
	time.Sleep(settle)
	return client, nil
}

// stopClient stops a client, cancelling what still runs after 10 s.
func stopClient(client *river.Client[pgx.Tx]) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Stop(ctx); err != nil {
		return fmt.Errorf("error stopping river client: %w", err)
	}
	return nil
}

// chainArgs is one hop of a bare River chain: a job whose only work is to
// insert its successor and complete itself in one transaction, the way a
// step hands over to the next.
type chainArgs struct {
	Chain int64 `json:"chain"`
	Hop   int   `json:"hop"`
	Hops  int   `json:"hops"`
}

func (chainArgs) Kind() string { return "gb_bench_chain" }

type chainWorker struct {
	river.WorkerDefaults[chainArgs]
	pool  *pgxpool.Pool
	times *StepTimes
}

func (w *chainWorker) Work(ctx context.Context, job *river.Job[chainArgs]) error {
	w.times.StepStarted(job.Args.Chain, job.Args.Hop, time.Now())
	client := river.ClientFromContext[pgx.Tx](ctx)
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if job.Args.Hop < job.Args.Hops {
			next := job.Args
			next.Hop++
			if _, err := client.InsertTx(ctx, tx, next, &river.InsertOpts{Queue: job.Queue}); err != nil {
				return fmt.Errorf("error inserting the next hop: %w", err)
			}
		}
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("error completing hop %d: %w", job.Args.Hop, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.times.StepCommitted(job.Args.Chain, job.Args.Hop, time.Now())
	return nil
}

// Chains runs bare River chains on a client of its own.
type Chains struct {
	client *river.Client[pgx.Tx]
	times  *StepTimes
	queue  string
}

// StartChains starts the client of c's queue.
func StartChains(ctx context.Context, pool *pgxpool.Pool, c RiverConfig) (*Chains, error) {
	times := NewStepTimes(nil)
	workers := river.NewWorkers()
	river.AddWorker(workers, &chainWorker{pool: pool, times: times})
	client, err := startClient(ctx, pool, c, workers)
	if err != nil {
		return nil, err
	}
	return &Chains{client: client, times: times, queue: c.Queue}, nil
}

// Run inserts chains chains of hops jobs at once and returns their timings
// once every hop has committed.
func (c *Chains) Run(ctx context.Context, chains, hops int) (ChainStats, error) {
	c.times.Reset()
	begin := time.Now()
	for i := range chains {
		if _, err := c.client.Insert(ctx, chainArgs{Chain: int64(i), Hop: 1, Hops: hops}, &river.InsertOpts{Queue: c.queue}); err != nil {
			return ChainStats{}, fmt.Errorf("error inserting chain %d: %w", i, err)
		}
	}
	if err := c.times.WaitCommits(ctx, chains*hops, 30*time.Second); err != nil {
		return ChainStats{}, fmt.Errorf("river chains: %w", err)
	}
	return c.times.Stats(begin, nil), nil
}

// Stop stops the client.
func (c *Chains) Stop() error { return stopClient(c.client) }

// RunChains starts a client for c, runs chains chains of hops jobs on it
// once, and stops it.
func RunChains(ctx context.Context, pool *pgxpool.Pool, c RiverConfig, chains, hops int) (ChainStats, error) {
	ch, err := StartChains(ctx, pool, c)
	if err != nil {
		return ChainStats{}, err
	}
	st, err := ch.Run(ctx, chains, hops)
	if serr := ch.Stop(); err == nil {
		err = serr
	}
	return st, err
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
	all     chan struct{} // closed when want jobs have started
	want    int
}

// Work records when the job started, once per job.
func (w *pingWorker) Work(_ context.Context, job *river.Job[pingArgs]) error {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.started[job.Args.Seq]; ok {
		return nil
	}
	w.started[job.Args.Seq] = now
	if len(w.started) == w.want {
		close(w.all)
	}
	return nil
}

// InsertToStart inserts n jobs one at a time, gap apart, each with a
// client's Insert (its own transaction), on a client of c's queue, and
// returns the latencies from each insert's return to its job's start.
func InsertToStart(ctx context.Context, pool *pgxpool.Pool, c RiverConfig, n int, gap time.Duration) ([]time.Duration, error) {
	w := &pingWorker{started: map[int]time.Time{}, all: make(chan struct{}), want: n}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err := startClient(ctx, pool, c, workers)
	if err != nil {
		return nil, err
	}
	inserted := make([]time.Time, n)
	for i := range n {
		if _, err = client.Insert(ctx, pingArgs{Seq: i}, &river.InsertOpts{Queue: c.Queue}); err != nil {
			break
		}
		inserted[i] = time.Now()
		time.Sleep(gap)
	}
	if err == nil {
		select {
		case <-w.all:
		case <-time.After(30 * time.Second):
			err = fmt.Errorf("%d of %d no-op jobs started within 30 s", len(w.snapshot()), n)
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if serr := stopClient(client); err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("river insert to start: %w", err)
	}
	started := w.snapshot()
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = started[i].Sub(inserted[i])
	}
	return out, nil
}

func (w *pingWorker) snapshot() map[int]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int]time.Time, len(w.started))
	for k, v := range w.started {
		out[k] = v
	}
	return out
}
