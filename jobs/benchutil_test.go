package jobs_test

import (
	"context"
	"fmt"
	"go/build"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/bench"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// The benchmarks' measuring parts (step times, River chains and inserts,
// the scripted models) are package bench's, which gb bench also runs.

// pct is the p-th percentile (0 < p <= 1) of ds by nearest rank.
func pct(ds []time.Duration, p float64) time.Duration { return bench.Pct(ds, p) }

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
func benchAgent(b testing.TB, pool *pgxpool.Pool, model llm.Model, obs jobs.Observer) *jobs.Service {
	b.Helper()
	a, err := bench.StartAgent(context.Background(), pool, model, obs, jobs.Config{}, quietLogger())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bench.StopAgent(a) })
	return a
}

// benchDocs loads a few small Go packages' docs as the default dataset.
func benchDocs(b testing.TB, pool *pgxpool.Pool) {
	b.Helper()
	src := filepath.Join(build.Default.GOROOT, "src")
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

// runChains runs chains bare River chains of hops jobs each on a client of
// its own that works queue; cooldown 0 leaves River's default.
func runChains(b testing.TB, pool *pgxpool.Pool, queue string, chains, hops int, cooldown, poll time.Duration) bench.ChainStats {
	b.Helper()
	st, err := bench.RunChains(context.Background(), pool,
		bench.RiverConfig{Queue: queue, Cooldown: cooldown, Poll: poll, Logger: quietLogger()}, chains, hops)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// insertToStart inserts n no-op jobs one at a time, every gap, and returns
// the latencies from each insert's return to its job's start.
func insertToStart(b testing.TB, pool *pgxpool.Pool, queue string, n int, gap time.Duration) []time.Duration {
	b.Helper()
	ds, err := bench.InsertToStart(context.Background(), pool, bench.RiverConfig{Queue: queue,
		Cooldown: jobs.FetchCooldownDefault, Poll: jobs.FetchPollDefault, Logger: quietLogger()}, n, gap)
	if err != nil {
		b.Fatal(err)
	}
	return ds
}
