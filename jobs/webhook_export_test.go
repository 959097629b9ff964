package jobs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// WebhookDelayForTest is the delay after a failed delivery attempt, without
// jitter.
func WebhookDelayForTest(base time.Duration, attempt int) time.Duration {
	return webhookDelay(base, attempt)
}

// ClassifyAttemptForTest is the outcome of an attempt that got code or err.
func ClassifyAttemptForTest(code int, err error, last bool) string {
	return classifyAttempt(code, err, last, 1).outcome
}

// EndAgainForTest ends a run once more with the same status and error, as
// a repeated end would (a retried step, a repair racing it), in a
// transaction that locks its tree as every end does.
func (a *Service) EndAgainForTest(ctx context.Context, runID int64) error {
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		seen, err := GetRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		run, err := a.lockTree(ctx, tx, seen)
		if err != nil {
			return err
		}
		return a.endRun(ctx, tx, run, run.Status, run.Report, run.Error, 0)
	})
}
