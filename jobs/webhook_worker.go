package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Retries of a delivery.
const (
	// WebhookRetryBaseDefault is the delay after a delivery's first failed
	// attempt (Config.WebhookRetryBase); it doubles after each failure, up
	// to webhookMaxDelayFactor times itself (4 h with this base).
	WebhookRetryBaseDefault = 10 * time.Second
	webhookMaxDelayFactor   = 1440
	// WebhookMaxAttempts bounds the attempts of a delivery: with the
	// default base, the last comes about a day after the first (25.7 h,
	// give or take the jitter of a tenth of each delay).
	WebhookMaxAttempts = 17
	// webhookJobTimeout bounds a delivery job; the sender's own timeout
	// is shorter.
	webhookJobTimeout = 45 * time.Second
)

// Statuses of a delivery (WebhookDelivery.Status) and outcomes of an
// attempt (WebhookAttempt.Outcome).
const (
	// DeliveryPending: not delivered yet, an attempt to come.
	DeliveryPending = "pending"
	// DeliveryDelivered: the receiver answered 2xx.
	DeliveryDelivered = "delivered"
	// DeliveryRefused: the receiver refused it (a 4xx other than 408, 409
	// and 429, or a redirect), or the guard refused its address; not
	// retried.
	DeliveryRefused = "refused"
	// DeliveryFailed: its last attempt failed too.
	DeliveryFailed = "failed"
	// AttemptRetrying: the attempt failed and another comes.
	AttemptRetrying = "retrying"
)

// webhookDelay is the delay after failed attempt n (from 1) before the
// next, without jitter. It is a formula of the delivery job's attempt,
// which River keeps in Postgres: each attempt is a job run, possibly hours
// later in another process, so no in-process backoff spans them.
func webhookDelay(base time.Duration, attempt int) time.Duration {
	d := base << min(max(attempt-1, 0), 20)
	return min(d, base*webhookMaxDelayFactor)
}

// webhookWorker is the River worker of delivery jobs.
type webhookWorker struct {
	river.WorkerDefaults[WebhookArgs]
	agent *Service
}

// NextRetry is webhookDelay from now, give or take a tenth.
func (w *webhookWorker) NextRetry(job *river.Job[WebhookArgs]) time.Time {
	d := webhookDelay(w.agent.config.WebhookRetryBase, job.Attempt)
	return time.Now().Add(d - d/10 + rand.N(d/5+1))
}

// Timeout bounds one attempt.
func (w *webhookWorker) Timeout(*river.Job[WebhookArgs]) time.Duration { return webhookJobTimeout }

// Work makes one attempt at a delivery and records it. A delivery that is
// settled already (or whose run was deleted) is left alone, so that a job
// run again after its worker died posts nothing more.
func (w *webhookWorker) Work(ctx context.Context, job *river.Job[WebhookArgs]) error {
	a := w.agent
	d, err := loadDelivery(ctx, a.pool, job.Args.DeliveryID)
	if errors.Is(err, ErrNotFound) || err == nil && d.status != DeliveryPending {
		return nil
	}
	if err != nil {
		return err
	}
	body, err := a.webhookBody(ctx, d)
	if err != nil {
		return err
	}
	secret, err := GetWebhookSecret(ctx, a.pool, d.userID)
	if err != nil {
		return err
	}
	start := time.Now()
	header, err := webhookHeaders(secret.Secret, d.msgID, start, body)
	if err != nil {
		return err
	}
	code, perr := a.postWebhook(ctx, d.url, header, body)
	if perr != nil && interrupted(ctx) {
		return river.JobSnooze(0) // the worker is stopping: no attempt spent
	}
	res := classifyAttempt(code, perr, job.Attempt >= job.MaxAttempts, job.Attempt)
	res.took = time.Since(start)
	if err := a.recordAttempt(ctx, job, d, res); err != nil {
		return err
	}
	a.logger.InfoContext(ctx, "webhook attempt", "delivery_id", d.id, "run_id", d.runID, "event", d.event,
		"attempt", job.Attempt, "outcome", res.outcome, "http_status", code, "err", res.err)
	if res.outcome == AttemptRetrying || res.outcome == DeliveryFailed {
		return res.err // River retries it at NextRetry, or discards it after the last
	}
	return nil
}

// postWebhook posts through the sender; a process without one fails the
// attempt, to be retried by one that has it.
func (a *Service) postWebhook(ctx context.Context, url string, header map[string]string, body []byte) (int, error) {
	if a.webhooks == nil {
		return 0, errors.New("this worker has no webhook sender (jobs.Deps.Webhooks)")
	}
	return a.webhooks.Post(ctx, url, header, body)
}

// attemptResult is what an attempt came to.
type attemptResult struct {
	status  *int   // the receiver's HTTP status; nil when none answered
	outcome string // DeliveryDelivered, AttemptRetrying, DeliveryRefused or DeliveryFailed
	err     error  // why it was not delivered
	took    time.Duration
}

// classifyAttempt reads an attempt's answer: 2xx delivers; a guard's
// refusal, a redirect and a 4xx other than 408, 409 and 429 refuse; a
// network error and any other answer are retried, unless this was the
// last attempt.
func classifyAttempt(code int, err error, last bool, attempt int) attemptResult {
	var r attemptResult
	if err == nil {
		r.status = &code
	}
	answered := fmt.Sprintf("the receiver answered %d %s", code, http.StatusText(code))
	switch {
	case errors.Is(err, ErrWebhookRefused):
		r.outcome, r.err = DeliveryRefused, err
	case err != nil:
		r.outcome, r.err = AttemptRetrying, err
	case code >= 200 && code < 300:
		r.outcome = DeliveryDelivered
	case code >= 300 && code < 400:
		r.outcome, r.err = DeliveryRefused, errors.New(answered+", a redirect, which deliveries do not follow: set the webhook URL to where it leads")
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusConflict && code != http.StatusTooManyRequests:
		r.outcome, r.err = DeliveryRefused, errors.New(answered+": a 4xx other than 408, 409 and 429 is not retried")
	default:
		r.outcome, r.err = AttemptRetrying, errors.New(answered)
	}
	if r.outcome == AttemptRetrying && last {
		r.outcome, r.err = DeliveryFailed, fmt.Errorf("gave up after %d attempts: %w", attempt, r.err)
	}
	return r
}

// recordAttempt records an attempt and the delivery's status in one
// transaction, which completes the job when the delivery is settled
// (delivered or refused): a job run again would find it so.
func (a *Service) recordAttempt(ctx context.Context, job *river.Job[WebhookArgs], d *delivery, r attemptResult) error {
	status := r.outcome
	if status == AttemptRetrying {
		status = DeliveryPending
	}
	errText := ""
	if r.err != nil {
		errText = r.err.Error()
	}
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		// The attempt, then where its delivery stands (one still pending).
		b.Queue(`INSERT INTO gb_webhook_attempts (delivery_id, attempt, http_status, outcome, error, duration_ms)
			VALUES ($1, $2, $3, $4, $5, $6)`, d.id, job.Attempt, r.status, r.outcome, errText, r.took.Milliseconds())
		b.Queue(`UPDATE gb_webhook_deliveries SET attempts = attempts + 1, status = $2, updated_at = now()
			WHERE id = $1 AND status = 'pending'`, d.id, status)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("error recording attempt %d of webhook delivery %d: %w", job.Attempt, d.id, err)
		}
		if status != DeliveryDelivered && status != DeliveryRefused {
			return nil
		}
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("error completing webhook job %d: %w", job.ID, err)
		}
		return nil
	})
}
