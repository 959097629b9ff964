// Package schedule starts the researches that EventBridge Scheduler asks
// for: it reads a schedule's Input JSON strictly, checks it, and starts a
// root research owned by the named user, once per scheduled time however
// often the event is delivered.
//
// It may import jobs; it knows nothing of Lambda beyond the event it reads.
package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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
	// ScheduledTime is the time this delivery is for, RFC 3339. A retried
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

// Decode reads an Input strictly: valid UTF-8, one JSON object, no unknown
// field (names match exactly, not case-insensitively), each field of its
// type, and the required ones present.
func Decode(raw []byte) (Input, error) {
	var in Input
	if !utf8.Valid(raw) {
		return in, &InputError{Msg: "the event is not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return in, &InputError{Msg: "the event has data after its JSON object"}
	}
	if err := checkKeys(raw); err != nil {
		return in, err
	}
	in.User = strings.TrimSpace(in.User)
	return in, in.check()
}

// decodeError explains an error of json.Decoder.Decode.
func decodeError(err error) *InputError {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return &InputError{Msg: "the event is not a JSON object but a JSON " + te.Value}
	case errors.As(err, &te):
		return &InputError{Field: te.Field, Msg: fmt.Sprintf("must be a JSON %s, not %s", jsonKind(te.Type.Kind().String()), te.Value)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &InputError{Field: f, Msg: "is not a field of a scheduled research; allowed: " + allowedFields}
	default:
		return &InputError{Msg: "the event is not a JSON object: " + err.Error()}
	}
}

// checkKeys refuses a key that matched a field only case-insensitively, as
// encoding/json allows: {"TOPIC": ...} is not the topic.
func checkKeys(raw []byte) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return &InputError{Msg: "the event is not a JSON object: " + err.Error()}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Contains(fields, k) {
			return &InputError{Field: k, Msg: "is not a field of a scheduled research (names are case-sensitive); allowed: " + allowedFields}
		}
	}
	return nil
}

// check refuses missing, malformed and NUL-holding fields (a NUL would fail
// every query, as if worth a retry).
func (in Input) check() error {
	switch {
	case in.User == "":
		return &InputError{Field: "user", Msg: "is required: the name of the user who owns the research"}
	case in.Schedule == "":
		return &InputError{Field: "schedule", Msg: "is required: the schedule's ARN, <aws.scheduler.schedule-arn> in the schedule's Input"}
	case in.ScheduledTime == "":
		return &InputError{Field: "scheduled_time", Msg: "is required: <aws.scheduler.scheduled-time> in the schedule's Input"}
	case strings.ContainsRune(in.User, 0):
		return &InputError{Field: "user", Msg: "must not contain NUL characters"}
	case strings.ContainsRune(in.Schedule, 0):
		return &InputError{Field: "schedule", Msg: "must not contain NUL characters"}
	case in.MaxSteps != nil && *in.MaxSteps == 0:
		return &InputError{Field: "max_steps", Msg: fmt.Sprintf("must be between 1 and %d (got 0); leave it out for the default %d",
			jobs.MaxMaxSteps, jobs.DefaultMaxSteps)}
	}
	if _, err := time.Parse(time.RFC3339, in.ScheduledTime); err != nil {
		return &InputError{Field: "scheduled_time", Msg: fmt.Sprintf("%q is not an RFC 3339 time like 2026-01-02T15:04:05Z", in.ScheduledTime)}
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "int", "int64", "float64":
		return "number"
	}
	return goKind
}

// Key is the idempotency key of a delivery: the user, the schedule and the
// time it is for.
func (in Input) Key() string { return in.User + "/" + in.Schedule + "@" + in.ScheduledTime }

// Handler starts scheduled researches.
type Handler struct {
	// Agent inserts the researches; an insert-only one will do.
	Agent *jobs.Agent
	// Logger gets a line per event; nil means slog.Default().
	Logger *slog.Logger
}

// Handle starts the research an event asks for. A repeated delivery of the
// same scheduled time returns the run it started the first time, with
// Created false. An event that can never succeed is logged with the field
// at fault and acknowledged: Handle returns its Result.Invalid and no
// error, since EventBridge Scheduler invokes asynchronously and Lambda
// would retry an error to no avail. Any error it returns is worth a retry
// (the database unreachable, for one); what fails every attempt goes to
// the function's on-failure destination.
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) (Result, error) {
	logger := h.Logger
	if logger == nil {
		logger = slog.Default()
	}
	res, err := h.start(ctx, raw)
	var ie *InputError
	switch {
	case errors.As(err, &ie):
		logger.ErrorContext(ctx, "invalid scheduled research; acknowledged, not retried", "field", ie.Field, "err", err)
		return Result{Invalid: &Invalid{Field: ie.Field, Message: ie.Error()}}, nil
	case err != nil:
		logger.ErrorContext(ctx, "could not start scheduled research; Lambda retries it", "err", err)
	default:
		logger.InfoContext(ctx, "scheduled research", "run_id", res.RunID, "created", res.Created)
	}
	return res, err
}

func (h *Handler) start(ctx context.Context, raw json.RawMessage) (Result, error) {
	in, err := Decode(raw)
	if err != nil {
		return Result{}, err
	}
	userID, err := jobs.UserID(ctx, h.Agent.Pool(), in.User)
	if err != nil {
		// jobs.UserID wraps the driver's error when the query failed and
		// wraps nothing when there is no such user.
		if errors.Unwrap(err) == nil {
			return Result{}, &InputError{Field: "user", Msg: err.Error()}
		}
		return Result{}, err
	}
	p := jobs.StartParams{UserID: userID, Topic: in.Topic, Dataset: in.Dataset,
		MaxCostUSD: in.MaxCostUSD, MaxTokens: in.MaxTokens, ScheduleKey: in.Key()}
	if in.MaxSteps != nil {
		p.MaxSteps = *in.MaxSteps
	}
	run, created, err := h.Agent.StartResearch(ctx, p)
	var fe *jobs.FieldError
	if errors.As(err, &fe) {
		return Result{}, &InputError{Field: fe.Field, Msg: fe.Msg}
	}
	if err != nil {
		return Result{}, fmt.Errorf("error starting scheduled research: %w", err)
	}
	return Result{RunID: run.ID, Created: created}, nil
}
