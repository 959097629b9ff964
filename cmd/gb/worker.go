package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/logs"
	"github.com/gbresearch/gb/jobs"
)

// The waits of gb worker for Postgres at start.
const (
	// waitMin is the first wait, and the least of any.
	waitMin = time.Second
	// waitMax caps a wait.
	waitMax = 30 * time.Second
)

// startWorkerStack starts the stack of gb worker (startStack). While
// Postgres cannot be reached it waits and tries again, with jittered
// exponential backoff from waitMin to waitMax (waitBefore), logging each
// wait once at WARN on waitLog with the error, until ctx ends: a worker
// started before its database (by a supervisor, a compose file) comes up
// with it instead of exiting. Other errors (the settings, a database that
// refuses the credentials or does not exist) are returned at once.
func startWorkerStack(ctx context.Context, logger, waitLog *slog.Logger) (*stack, error) {
	waits := startWaits()
	for attempt := 1; ; attempt++ {
		s, err := startStack(ctx, logger, messengerPostgres)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil || !worthWaiting(err) {
			return nil, err
		}
		wait := max(waits.NextBackOff(), waitMin)
		waitLog.WarnContext(ctx, "database unreachable; gb worker waits for it", "err", err,
			"attempt", attempt, "retry_in", wait.Round(time.Millisecond))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("stopped while waiting for the database: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// startWaits are the waits after each failed attempt: waitMin doubled
// after each, capped at waitMax, less a random part of up to half of it
// (and the caller keeps each at waitMin at least), so that workers started
// together spread their attempts. The library spreads a wait evenly around
// its step (step·(1±factor)); a step of ¾ of the wait with a factor of ⅓
// spans exactly [wait/2, wait].
func startWaits() *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{InitialInterval: waitMin * 3 / 4, RandomizationFactor: 1.0 / 3,
		Multiplier: 2, MaxInterval: waitMax * 3 / 4}
	b.Reset()
	return b
}

// worthWaiting reports whether a failed start may succeed once Postgres is
// up: the database unreachable, starting up or shutting down, or not
// answering in time; not a login refused (SQLSTATE class 28) or a database
// that does not exist (3D000), which need a fix of the settings.
func worthWaiting(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "28") || pgErr.Code == "3D000") {
		return false
	}
	return jobs.DatabaseUnavailable(err) || errors.Is(err, context.DeadlineExceeded)
}

// newWaitLogger logs text to w at GB_LOG_LEVEL, as newLogger does but
// without its throttle: the waits are paced by their backoff, and each
// one is worth its line.
func newWaitLogger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if v := os.Getenv(config.EnvLogLevel); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: logs.InertAttrs(nil)}))
}
