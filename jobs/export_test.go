package jobs

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/jobs/llm"
)

// SpawnForTest runs the real spawn, in a transaction of its own that locks
// the tree as a step's transaction does.
func (a *Service) SpawnForTest(ctx context.Context, parentID int64, p SpawnParams) (*Run, error) {
	var child *Run
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		seen, err := GetRun(ctx, tx, parentID)
		if err != nil {
			return err
		}
		parent, err := a.lockTree(ctx, tx, seen)
		if err != nil {
			return err
		}
		child, err = a.spawn(ctx, tx, parent, p)
		return err
	})
	return child, err
}

// IsToolError reports whether err is a refusal the model is told about.
func IsToolError(err error) bool {
	_, ok := err.(*toolError)
	return ok
}

// RunToolForTest runs one tool call for a run in a transaction of its own,
// as a step would, and returns what the model would be told.
func (a *Service) RunToolForTest(ctx context.Context, runID int64, name, args string) (string, error) {
	var out string
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		seen, err := GetRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		run, err := a.lockTree(ctx, tx, seen)
		if err != nil {
			return err
		}
		env := &toolEnv{agent: a, tx: tx, run: run, step: run.Steps + 1}
		call := llm.ToolCall{ID: "t", Name: name, Arguments: []byte(args)}
		reads, err := a.runReads(ctx, run, env.step, []llm.ToolCall{call})
		if err != nil {
			return err
		}
		out, err = a.toolResult(ctx, env, call, reads[0])
		return err
	})
	return out, err
}

// Stopping reports whether Stop was called and has not returned.
func (a *Service) Stopping() bool { return a.stopping.Load() }

// OldestReady exposes oldestReady to the tests.
func (a *Service) OldestReady(ctx context.Context) (float64, error) { return a.oldestReady(ctx) }

// BreakerFailedForTest counts a transient failure against model's breaker
// as a step's call does.
func BreakerFailedForTest(ctx context.Context, pool *pgxpool.Pool, o OutageConfig, model, msg string) error {
	a := &Service{pool: pool, config: Config{Outage: o}, logger: slog.New(slog.DiscardHandler), tel: &instruments{}}
	_, err := a.failed(ctx, model, "test", msg, false)
	return err
}

// BreakerGateForTest asks model's breaker before a call as a step does,
// and reports whether the call got the probe.
func BreakerGateForTest(ctx context.Context, pool *pgxpool.Pool, o OutageConfig, model string) (bool, error) {
	a := &Service{pool: pool, config: Config{Outage: o}, logger: slog.New(slog.DiscardHandler), tel: &instruments{}}
	g, err := a.gate(ctx, model)
	return g.probe, err
}

// WakeProviderWaitsForTest makes the steps waiting for model due, as a
// closing breaker does.
func WakeProviderWaitsForTest(ctx context.Context, pool *pgxpool.Pool, model string) (int, error) {
	return wakeProviderWaits(ctx, pool, model)
}
