package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/gbresearch/gb/infra/httpwait"
)

// Retry policy defaults, used for the zero fields of Options.
const (
	// MaxRetriesDefault is how many times a retryable failure is retried.
	MaxRetriesDefault = 3
	// BackoffBaseDefault is the wait before the first retry; it doubles at
	// each further one, with jitter.
	BackoffBaseDefault = 500 * time.Millisecond
	// BackoffMaxDefault caps the computed wait between two attempts.
	BackoffMaxDefault = 5 * time.Second
	// RetryAfterMax is the longest Retry-After that is waited for; a
	// provider asking for longer gets no retry, and its error is returned.
	RetryAfterMax = 20 * time.Second
	// maxBody caps what is read of a provider's answer.
	maxBody = 8 << 20
)

// errNoRetry marks a failure a retry would repeat.
var errNoRetry = errors.New("not retried")

// ProviderError is a provider's refusal: the HTTP status and the text the
// provider gave for it.
type ProviderError struct {
	Provider string
	Status   int
	// Message is the provider's own error text (or the start of its body).
	Message string
}

// Error says which provider answered what.
func (e *ProviderError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "no error text"
	}
	return fmt.Sprintf("%s: HTTP %d %s: %s", e.Provider, e.Status, http.StatusText(e.Status), msg)
}

// retrier runs one provider request with retries. errText extracts the
// provider's error text from an error body.
type retrier struct {
	provider    string
	client      *http.Client
	maxRetries  int
	backoffBase time.Duration
	backoffMax  time.Duration
	log         *slog.Logger
	errText     func(body []byte) string
	// sleep takes the wait between two attempts. It is httpwait.Sleep; the
	// package's tests replace it to see the waits chosen.
	sleep func(ctx context.Context, d time.Duration) bool
}

// postJSON posts payload as JSON to url with a bearer key, through do.
func (r *retrier) postJSON(ctx context.Context, url, key string, payload []byte) ([]byte, error) {
	return r.do(ctx, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
		}
		return req, err
	})
}

// do sends the request made by build (called once per attempt) until it
// answers 2xx, fails for good, or runs out of retries, and returns the body
// of the 2xx answer.
func (r *retrier) do(ctx context.Context, build func(context.Context) (*http.Request, error)) ([]byte, error) {
	waits := waitsBetween(r.backoffBase, r.backoffMax)
	for attempt := 0; ; attempt++ {
		req, err := build(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: building request: %w", r.provider, err)
		}
		body, after, err := r.once(req)
		if err == nil {
			return body, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", r.provider, errors.Join(ctx.Err(), err))
		}
		wait, ok := r.wait(attempt, after, err, waits.NextBackOff())
		if !ok && after > RetryAfterMax {
			return nil, fmt.Errorf("%w (it asks to retry after %s, longer than a search waits)", err, after)
		}
		if !ok {
			return nil, err
		}
		r.log.InfoContext(ctx, "search: retrying provider request", slog.String("provider", r.provider),
			slog.Int("attempt", attempt+1), slog.Duration("wait", wait), slog.String("error", err.Error()))
		if !r.sleep(ctx, wait) {
			return nil, fmt.Errorf("%s: no time left to retry after %d attempts: %w", r.provider, attempt+1, err)
		}
	}
}

// wait decides whether to retry after attempt failed with err, and how
// long to wait first. after is the Retry-After the provider sent (<0: none);
// computed is the attempt's backoff, for when it sent none.
func (r *retrier) wait(attempt int, after time.Duration, err error, computed time.Duration) (time.Duration, bool) {
	var pe *ProviderError
	if errors.As(err, &pe) && !retryable(pe.Status) || errors.Is(err, errNoRetry) {
		return 0, false
	}
	if attempt >= r.maxRetries {
		return 0, false
	}
	if after > RetryAfterMax {
		return 0, false
	}
	if after >= 0 {
		return after, true
	}
	return computed, true
}

// once sends req and reads its answer: the body of a 2xx, or an error (a
// *ProviderError for any other status, with the Retry-After it carried).
func (r *retrier) once(req *http.Request) ([]byte, time.Duration, error) {
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, -1, fmt.Errorf("%s: %w", r.provider, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, -1, fmt.Errorf("%s: reading answer: %w", r.provider, err)
	}
	if len(body) > maxBody {
		return nil, -1, fmt.Errorf("%s: answer larger than %d bytes: %w", r.provider, maxBody, errNoRetry)
	}
	if resp.StatusCode/100 == 2 {
		return body, -1, nil
	}
	after, ok := httpwait.RetryAfter(resp.Header, time.Now())
	if !ok {
		after = -1
	}
	return nil, after, &ProviderError{Provider: r.provider, Status: resp.StatusCode, Message: errMessage(body, r.errText)}
}

func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// errMessage is the provider's error text, or the start of the body when
// errText finds none.
func errMessage(body []byte, errText func([]byte) string) string {
	if errText != nil {
		if s := strings.TrimSpace(errText(body)); s != "" {
			return clip(s, 500)
		}
	}
	return clip(strings.TrimSpace(string(body)), 300)
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// waitsBetween are the waits after each failed attempt of one request:
// base doubled after each, capped at most, jittered into [d/2, d] so that
// callers failing together do not retry together. The library spreads a
// wait evenly around its step (step·(1±factor)); a step of ¾ of the wait
// with a factor of ⅓ spans exactly [d/2, d]. Every attempt draws one,
// whether a Retry-After replaces it or not, so that the n-th retry's
// backoff is base·2^(n-1) as before.
func waitsBetween(base, most time.Duration) *backoff.ExponentialBackOff {
	base = min(base, most)
	b := &backoff.ExponentialBackOff{InitialInterval: base * 3 / 4, RandomizationFactor: 1.0 / 3,
		Multiplier: 2, MaxInterval: most * 3 / 4}
	b.Reset()
	return b
}
