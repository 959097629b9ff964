package jobs

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// This file is what a webhook is: the events gb sends, where it may send
// them, and a user's default URL. A root research that ends with a webhook
// URL (its own, else its owner's default when it started) gets one
// delivery, inserted with its River job in the transaction that ends it
// (webhook_enqueue.go); the job posts it signed in the Standard Webhooks
// format (webhook_sign.go), through the WebhookSender, and retries it for
// about a day (webhook_worker.go). Every attempt is recorded
// (webhook_list.go lists them).

// Webhook event types: the type of a delivery's payload.
const (
	// WebhookSucceeded: the research wrote its report.
	WebhookSucceeded = "research.succeeded"
	// WebhookFailed: the research failed, other than by its owner's cancel.
	WebhookFailed = "research.failed"
	// WebhookTimedOut: the research ran past its wall-clock cap.
	WebhookTimedOut = "research.timed_out"
	// WebhookCancelled: its owner cancelled the research (Service.Cancel).
	WebhookCancelled = "research.cancelled"
	// WebhookInputRequired: the research asked its owner a question, or
	// proposed its plan of sub-agents, and waits for the answer or the
	// decision; sent once per question or plan, with the parking
	// (owner_wait.go), not with an end.
	WebhookInputRequired = "research.input_required"
)

// WebhookEvents lists every event type, in the order the docs give them.
var WebhookEvents = []string{WebhookSucceeded, WebhookFailed, WebhookTimedOut, WebhookCancelled, WebhookInputRequired}

// cancelledByOwner is the error Cancel ends a run with; a root failed with
// exactly this error was cancelled (WebhookCancelled).
const cancelledByOwner = "cancelled by its owner"

// MaxWebhookURLLen bounds a webhook URL, in characters.
const MaxWebhookURLLen = 2000

// ErrWebhookRefused marks a webhook URL or address that deliveries may not
// reach (a private, loopback or metadata address, a port not allowed);
// errors wrapping it say why.
var ErrWebhookRefused = errors.New("webhook address refused")

// WebhookSender posts deliveries through the guard that keeps them off
// private addresses. Deps.Webhooks is one; it must be safe for concurrent
// use.
type WebhookSender interface {
	// Check returns nil when deliveries may reach rawURL as far as can be
	// told now (its host resolved, each address checked), or an error
	// wrapping ErrWebhookRefused that says why not. A failure to resolve
	// that may pass is no refusal: the delivery checks again.
	Check(ctx context.Context, rawURL string) error
	// Post sends body as JSON to rawURL with the headers, following no
	// redirect, and returns the answer's status code. An address the guard
	// refuses is an error wrapping ErrWebhookRefused; a network error or
	// a timeout is any other error.
	Post(ctx context.Context, rawURL string, header map[string]string, body []byte) (status int, err error)
}

// ValidateWebhookURL checks the form of a webhook URL for the field that
// holds it: http or https, a host, no credentials, at most
// MaxWebhookURLLen characters. "" is valid (no webhook).
func ValidateWebhookURL(field, raw string) error {
	if raw == "" {
		return nil
	}
	switch n := utf8.RuneCountInString(raw); {
	case !utf8.ValidString(raw):
		return &FieldError{field, "must be valid UTF-8 text"}
	case n > MaxWebhookURLLen:
		return &FieldError{field, fmt.Sprintf("is %d characters; a webhook URL has at most %d", n, MaxWebhookURLLen)}
	case strings.TrimSpace(raw) != raw:
		return &FieldError{field, "must not start or end with white space"}
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return &FieldError{field, "is not a URL: " + strings.TrimPrefix(err.Error(), "parse ")}
	case u.Scheme != "https" && u.Scheme != "http":
		return &FieldError{field, fmt.Sprintf("must be an https (or http) URL, not %q", u.Scheme)}
	case u.User != nil:
		return &FieldError{field, "must not hold credentials (user:password@); authenticate deliveries by their signature"}
	case u.Hostname() == "":
		return &FieldError{field, "has no host"}
	}
	return nil
}

// checkWebhookURL validates a webhook URL's form, then asks the sender's
// guard whether deliveries may reach it; without a sender only the form
// is checked (the delivery's guard still applies).
func (a *Service) checkWebhookURL(ctx context.Context, field, raw string) error {
	if err := ValidateWebhookURL(field, raw); err != nil || raw == "" || a.webhooks == nil {
		return err
	}
	err := a.webhooks.Check(ctx, raw)
	if errors.Is(err, ErrWebhookRefused) {
		return &FieldError{field, "deliveries may not reach it: " + err.Error()}
	}
	if err != nil {
		a.logger.InfoContext(ctx, "webhook URL not checked: its host did not resolve now", "err", err)
	}
	return nil
}

// WebhookSettings are a user's webhook settings.
type WebhookSettings struct {
	// URL is the default webhook URL of the user's researches; "" for none.
	URL string `json:"url"`
	// Events are the event types gb sends.
	Events []string `json:"events"`
}

// GetWebhookSettings returns a user's webhook settings.
func GetWebhookSettings(ctx context.Context, db DB, userID int64) (*WebhookSettings, error) {
	s := &WebhookSettings{Events: slices.Clone(WebhookEvents)}
	err := db.QueryRow(ctx, "SELECT coalesce(webhook_url, '') FROM gb_users WHERE id = $1", userID).Scan(&s.URL)
	if err != nil {
		return nil, fmt.Errorf("error reading webhook settings: %w", err)
	}
	return s, nil
}

// SetWebhookURL sets the default webhook URL of a user's researches after
// the same checks as a research's own; "" removes it. Researches already
// started keep the URL they started with.
func (a *Service) SetWebhookURL(ctx context.Context, userID int64, raw string) (*WebhookSettings, error) {
	if err := a.checkWebhookURL(ctx, "url", raw); err != nil {
		return nil, err
	}
	if _, err := a.pool.Exec(ctx, "UPDATE gb_users SET webhook_url = nullif($2, '') WHERE id = $1", userID, raw); err != nil {
		return nil, fmt.Errorf("error setting the webhook URL: %w", err)
	}
	return GetWebhookSettings(ctx, a.pool, userID)
}
