package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// WebhookKind is the River job kind of a webhook delivery.
const WebhookKind = "gb_webhook"

// WebhookArgs are the arguments of a delivery job: the delivery it posts.
type WebhookArgs struct {
	DeliveryID int64 `json:"delivery_id"`
}

// Kind implements river.JobArgs.
func (WebhookArgs) Kind() string { return WebhookKind }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (WebhookArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: WebhookMaxAttempts}
}

// webhookEndKey is the dedup_key of a run's end: a run ends once, and
// whatever ends it again (a retried step, a repair) inserts nothing more.
const webhookEndKey = "ended"

// endEvent is the webhook event of a root that ends with status and
// errText: a failure is a cancel when its error is exactly the one Cancel
// writes.
func endEvent(status, errText string) string {
	switch {
	case status == StatusSucceeded:
		return WebhookSucceeded
	case status == StatusTimedOut:
		return WebhookTimedOut
	case errText == cancelledByOwner:
		return WebhookCancelled
	}
	return WebhookFailed
}

// queueEndWebhook queues in b, in the batch that ends a root, the
// delivery of its end, when the root has a webhook URL; insertWebhookJob
// inserts the delivery's job once b is sent. A sub-agent's end sends none
// (nil).
func queueEndWebhook(b *pgx.Batch, run *Run, status, errText string) *queuedWebhook {
	if !run.IsRoot() {
		return nil
	}
	return queueWebhook(b, run.ID, endEvent(status, errText), webhookEndKey)
}

// enqueueWebhook inserts in tx the delivery of event for a run and its job,
// once per key: nothing when the run has no webhook URL or a delivery
// with that key was inserted before.
func (a *Service) enqueueWebhook(ctx context.Context, tx pgx.Tx, runID int64, event, key string) error {
	b := &pgx.Batch{}
	w := queueWebhook(b, runID, event, key)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return a.insertWebhookJob(ctx, tx, w)
}

// queuedWebhook is a delivery queued in a batch (queueWebhook).
type queuedWebhook struct {
	runID int64
	event string
	id    int64 // 0: none inserted
}

// queueWebhook queues in b the insert of a delivery of event for a run,
// once per key (none when the run has no webhook URL); once b is sent,
// insertWebhookJob inserts the delivery's job.
func queueWebhook(b *pgx.Batch, runID int64, event, key string) *queuedWebhook {
	w := &queuedWebhook{runID: runID, event: event}
	b.Queue(`INSERT INTO gb_webhook_deliveries (run_id, event, dedup_key, url, msg_id)
		SELECT id, $2, $3, webhook_url, $4 FROM gb_agent_research_runs WHERE id = $1 AND webhook_url IS NOT NULL
		ON CONFLICT (run_id, dedup_key) DO NOTHING
		RETURNING id`, runID, event, key, newWebhookMsgID()).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&w.id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("error inserting the %s webhook of run %d: %w", event, runID, err)
		}
		return nil
	})
	return w
}

// insertWebhookJob inserts in tx the job of a delivery queueWebhook
// inserted, if it did.
func (a *Service) insertWebhookJob(ctx context.Context, tx pgx.Tx, w *queuedWebhook) error {
	if w == nil || w.id == 0 {
		return nil
	}
	if _, err := a.river.InsertTx(ctx, tx, WebhookArgs{DeliveryID: w.id}, &river.InsertOpts{Queue: a.config.Queue}); err != nil {
		return fmt.Errorf("error inserting the job of webhook delivery %d: %w", w.id, err)
	}
	return nil
}
