package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

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
	for attempt := 1; ; attempt++ {
		s, err := startStack(ctx, logger, messengerPostgres)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil || !worthWaiting(err) {
			return nil, err
		}
		wait := waitBefore(attempt, rand.Float64)
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

// waitBefore is the wait after the failed attempt n (from 1): waitMin
// doubled n-1 times, capped at waitMax, less a random part of up to half
// of it (rnd returns [0, 1)), and never less than waitMin. Workers started
// together so spread their attempts.
func waitBefore(n int, rnd func() float64) time.Duration {
	d := waitMax
	if n <= 16 {
		d = min(waitMax, waitMin<<(n-1))
	}
	d -= time.Duration(rnd() * float64(d/2))
	return max(d, waitMin)
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
