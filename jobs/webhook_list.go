package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// WebhookPayload is the body of a delivery, in the shape Standard Webhooks
// advises: the event's type, when it happened, and its data.
type WebhookPayload struct {
	Type      string      `json:"type"`
	Timestamp time.Time   `json:"timestamp"`
	Data      WebhookData `json:"data"`
}

// WebhookData is what a delivery says of its research: never its report,
// which the receiver reads at Path with its API key.
type WebhookData struct {
	// ID is the root run's id.
	ID      int64      `json:"id"`
	Status  string     `json:"status"`
	Error   string     `json:"error"`
	EndedAt *time.Time `json:"ended_at"`
	// Usage is the usage of the research's whole tree.
	Usage Totals `json:"usage"`
	// Path is the API path of the run, e.g. /v1/gb/research/42.
	Path string `json:"path"`
}

// delivery is a delivery as its job reads it.
type delivery struct {
	id, runID, userID         int64
	event, url, msgID, status string
	payload                   *string
}

// loadDelivery reads a delivery and its run's owner; ErrNotFound when it
// is gone with its run.
func loadDelivery(ctx context.Context, db DB, id int64) (*delivery, error) {
	var d delivery
	err := db.QueryRow(ctx, `SELECT d.id, d.run_id, r.user_id, d.event, d.url, d.msg_id, d.status, d.payload
		FROM gb_webhook_deliveries d JOIN gb_agent_research_runs r ON r.id = d.run_id WHERE d.id = $1`, id).
		Scan(&d.id, &d.runID, &d.userID, &d.event, &d.url, &d.msgID, &d.status, &d.payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("error reading webhook delivery %d: %w", id, err)
	}
	return &d, nil
}

// webhookBody is the delivery's body: written at its first attempt from
// the run and its tree as they are then, and the same at every other.
func (a *Service) webhookBody(ctx context.Context, d *delivery) ([]byte, error) {
	if d.payload != nil {
		return []byte(*d.payload), nil
	}
	run, err := GetRun(ctx, a.pool, d.runID)
	if err != nil {
		return nil, err
	}
	tree, err := Tree(ctx, a.pool, run.RootID)
	if err != nil {
		return nil, err
	}
	usage, err := TreeTotals(ctx, a.pool, tree)
	if err != nil {
		return nil, err
	}
	p := WebhookPayload{Type: d.event, Timestamp: time.Now().UTC(), Data: WebhookData{ID: run.ID, Status: run.Status,
		Error: run.Error, EndedAt: run.EndedAt, Usage: usage, Path: "/v1/gb/research/" + strconv.FormatInt(run.ID, 10)}}
	if run.EndedAt != nil {
		p.Timestamp = run.EndedAt.UTC()
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("error encoding webhook payload: %w", err)
	}
	var stored string
	if err := a.pool.QueryRow(ctx, `UPDATE gb_webhook_deliveries SET payload = coalesce(payload, $2) WHERE id = $1
		RETURNING payload`, d.id, string(b)).Scan(&stored); err != nil {
		return nil, fmt.Errorf("error storing webhook payload: %w", err)
	}
	return []byte(stored), nil
}

// WebhookDelivery is one event sent, or to send, for a research, with its
// attempts.
type WebhookDelivery struct {
	ID    int64  `json:"id"`
	RunID int64  `json:"run_id"`
	Event string `json:"event"`
	URL   string `json:"url"`
	// WebhookID is the webhook-id header of every attempt.
	WebhookID string `json:"webhook_id"`
	// Status is DeliveryPending, DeliveryDelivered, DeliveryRefused or
	// DeliveryFailed.
	Status    string           `json:"status"`
	Attempts  []WebhookAttempt `json:"attempts"`
	CreatedAt time.Time        `json:"created_at"`
	UpdatedAt time.Time        `json:"updated_at"`
}

// WebhookAttempt is one attempt at a delivery.
type WebhookAttempt struct {
	Attempt int `json:"attempt"`
	// HTTPStatus is the receiver's answer; nil when none came.
	HTTPStatus *int `json:"http_status"`
	// Outcome is DeliveryDelivered, AttemptRetrying, DeliveryRefused or
	// DeliveryFailed.
	Outcome    string    `json:"outcome"`
	Error      string    `json:"error"`
	DurationMS int64     `json:"duration_ms"`
	At         time.Time `json:"at"`
}

// WebhookDeliveries lists the deliveries of a run the user owns, oldest
// first, each with its attempts in order.
func WebhookDeliveries(ctx context.Context, db DB, userID, runID int64) ([]WebhookDelivery, error) {
	if _, err := GetForUser(ctx, db, userID, runID); err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, `SELECT d.id, d.run_id, d.event, d.url, d.msg_id, d.status, d.created_at, d.updated_at,
			coalesce((SELECT json_agg(json_build_object('attempt', a.attempt, 'http_status', a.http_status,
				'outcome', a.outcome, 'error', a.error, 'duration_ms', a.duration_ms, 'at', a.at) ORDER BY a.id)
			FROM gb_webhook_attempts a WHERE a.delivery_id = d.id), '[]')
		FROM gb_webhook_deliveries d WHERE d.run_id = $1 ORDER BY d.id`, runID)
	if err != nil {
		return nil, fmt.Errorf("error listing webhook deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WebhookDelivery, error) {
		var d WebhookDelivery
		err := row.Scan(&d.ID, &d.RunID, &d.Event, &d.URL, &d.WebhookID, &d.Status, &d.CreatedAt, &d.UpdatedAt, &d.Attempts)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("error listing webhook deliveries: %w", err)
	}
	return out, nil
}
