// Package schedule starts the researches that EventBridge Scheduler asks
// for: it reads a schedule's Input JSON strictly, checks it, and starts a
// root research owned by the named user, once per scheduled time however
// often the event is delivered.
//
// It may import jobs; it knows nothing of Lambda beyond the event it reads.
package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gbresearch/gb/jobs"
)

// Input is the Input JSON of a schedule. EventBridge Scheduler fills
// schedule and scheduled_time from its context attributes
// <aws.scheduler.schedule-arn> and <aws.scheduler.scheduled-time>.
type Input struct {
	// User names the owner of the research; the user must exist.
	User string `json:"user"`
	// Topic is the question to research.
	Topic string `json:"topic"`
	// MaxSteps bounds the research's steps (optional, as in the API's
	// POST /v1/gb/research, like the next three). Nil when absent, which
	// means the default; an explicit 0 is refused.
	MaxSteps *int `json:"max_steps"`
	// Dataset names the knowledge base (jobs.DefaultDataset when empty).
	Dataset string `json:"dataset"`
	// MaxCostUSD is the tree's budget in dollars (0: the default budget).
	MaxCostUSD float64 `json:"max_cost_usd"`
	// MaxTokens is the tree's token budget (0: the default budget).
	MaxTokens int64 `json:"max_tokens"`
	// Schedule identifies the schedule (its ARN).
	Schedule string `json:"schedule"`
	// ScheduledTime is the time this delivery is for, RFC 3339; Decode
	// writes it in UTC with no trailing fractional zeros. A retried
	// delivery carries the same time, which makes the start idempotent.
	ScheduledTime string `json:"scheduled_time"`
}

// fields lists Input's JSON fields, exactly as spelled.
var fields = []string{"user", "topic", "max_steps", "dataset", "max_cost_usd", "max_tokens", "schedule", "scheduled_time"}

// allowedFields lists Input's JSON fields, for error messages.
var allowedFields = strings.Join(fields, ", ")

// Result is what the function returns.
type Result struct {
	// RunID is the research's run (0 when the event was invalid).
	RunID int64 `json:"run_id"`
	// Created is false when this delivery repeated one that started it.
	Created bool `json:"created"`
	// Invalid, when set, is why the event can never start a research: it
	// was logged and acknowledged, so that Lambda does not retry it.
	Invalid *Invalid `json:"invalid,omitempty"`
}

// Invalid is the answer to an event that can never start a research.
type Invalid struct {
	// Field is the JSON field at fault; empty when the event as a whole is.
	Field string `json:"field"`
	// Message says what is wrong and what is allowed.
	Message string `json:"message"`
}

// InputError is an event that can never start a research: retrying it will
// not help. Field names the JSON field at fault.
type InputError struct {
	// Field is the JSON field at fault; empty when the event as a whole is.
	Field string
	// Msg says what is wrong and what is allowed.
	Msg string
}

// Error implements error: "field: message".
func (e *InputError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Key is the idempotency key of a delivery: the user, the schedule and the
// time it is for, as Decode normalized it (so one instant makes one key
// however it was written).
func (in Input) Key() string { return in.User + "/" + in.Schedule + "@" + in.ScheduledTime }

// Handler starts scheduled researches.
type Handler struct {
	// Service inserts the researches; an insert-only one will do.
	Service *jobs.Service
	// Logger gets a line per event; nil means slog.Default().
	Logger *slog.Logger
}

// Handle starts the research an event asks for. A repeated delivery of the
// same scheduled time returns the run it started the first time, with
// Created false. An event that can never succeed is refused at once: it
// is logged at WARN with the field at fault and acknowledged (Handle
// returns its Result.Invalid and no error), since EventBridge Scheduler
// invokes asynchronously and Lambda would retry an error to no avail.
// Any error it returns is worth a retry (the database unreachable, for
// one); what fails every attempt goes to the function's on-failure
// destination.
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) (Result, error) {
	logger := h.Logger
	if logger == nil {
		logger = slog.Default()
	}
	res, err := h.start(ctx, raw)
	var ie *InputError
	switch {
	case errors.As(err, &ie):
		logger.WarnContext(ctx, "scheduled research refused; acknowledged, not retried", "field", ie.Field, "err", err)
		return Result{Invalid: &Invalid{Field: ie.Field, Message: ie.Error()}}, nil
	case err != nil:
		logger.ErrorContext(ctx, "could not start scheduled research; Lambda retries it", "err", err)
	default:
		logger.InfoContext(ctx, "scheduled research", "run_id", res.RunID, "created", res.Created)
	}
	return res, err
}

// Invoke is Handle on the raw payload of an invocation, with the Result
// as JSON: the signature of aws-lambda-go's lambda.Handler. Unlike a typed
// handler, which the runtime library decodes the payload for (and fails,
// to be retried, when it is empty or not JSON), it hands every payload to
// Handle, so that Handle refuses what can never succeed.
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	res, err := h.Handle(ctx, payload)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("error encoding the result: %w", err)
	}
	return b, nil
}

func (h *Handler) start(ctx context.Context, raw json.RawMessage) (Result, error) {
	in, err := Decode(raw)
	if err != nil {
		return Result{}, err
	}
	userID, err := jobs.UserID(ctx, h.Service.Pool(), in.User)
	if err != nil {
		// jobs.UserID wraps the driver's error when the query failed and
		// wraps nothing when there is no such user.
		if errors.Unwrap(err) == nil {
			return Result{}, &InputError{Field: "user", Msg: err.Error()}
		}
		return Result{}, refusedValue(err)
	}
	p := jobs.StartParams{UserID: userID, Topic: in.Topic, Dataset: in.Dataset,
		MaxCostUSD: in.MaxCostUSD, MaxTokens: in.MaxTokens, ScheduleKey: in.Key()}
	if in.MaxSteps != nil {
		p.MaxSteps = *in.MaxSteps
	}
	run, created, err := h.Service.StartResearch(ctx, p)
	var fe *jobs.FieldError
	if errors.As(err, &fe) {
		return Result{}, &InputError{Field: fe.Field, Msg: fe.Msg}
	}
	if err != nil {
		return Result{}, refusedValue(fmt.Errorf("error starting scheduled research: %w", err))
	}
	return Result{RunID: run.ID, Created: created}, nil
}

// refusedValue turns an error of Postgres that the same values would
// meet at every attempt (SQLSTATE class 22, data exception, or 54,
// program limit exceeded, such as an index row too large) into an
// InputError; other errors are returned as they are. Decode's limits
// should keep such values out; this keeps one that slips through from
// being retried to no avail.
func refusedValue(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "54")) {
		return &InputError{Msg: fmt.Sprintf("the database refused the event's values (SQLSTATE %s): %s", pgErr.Code, pgErr.Message)}
	}
	return err
}
