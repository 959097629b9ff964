package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/gbresearch/gb/jobs/llm"
)

// failure sorts the error of a call that got no chat completion into a
// *llm.CallError wrapping one of llm's sentinels:
//   - no HTTP request made (go-openai refused the request): ErrPermanent;
//   - no error response, because the caller's context ended, the network
//     failed or a 2xx body could not be read or decoded; a 408; a 5xx:
//     ErrTransient;
//   - a 429 "Request too large": ErrTooLarge; a 429 for want of quota
//     (insufficient_quota): ErrPermanent; any other 429: ErrRateLimited;
//   - a 400 about the context length: ErrContextLength;
//   - any other 4xx: ErrPermanent.
func (m *Model) failure(ctx context.Context, ex *exchange, cause error) *llm.CallError {
	limits := parseLimits(ex.header)
	ce := &llm.CallError{Limits: limits, Sent: ex.reached()}
	code, message := apiDetail(cause)
	status := ex.status
	kind := llm.ErrPermanent
	switch {
	case !ex.called:
		// Refused before any request was made.
	case status < http.StatusBadRequest && ctx.Err() != nil:
		ce.Err = fmt.Errorf("openai %s: %w: the caller's context ended (%w): %w",
			m.name, llm.ErrTransient, ctx.Err(), m.redact(cause))
		return ce
	case status < http.StatusBadRequest, status == http.StatusRequestTimeout,
		status >= http.StatusInternalServerError:
		kind = llm.ErrTransient
	case status == http.StatusTooManyRequests:
		kind = rateLimitKind(code, message)
	case status == http.StatusBadRequest && isContextLength(code, message):
		kind = llm.ErrContextLength
	}
	if kind == llm.ErrRateLimited {
		ce.RetryAfter = retryAfter(ex.header, message, limits, time.Now())
	} else if ex.header != nil {
		ce.RetryAfter = retryAfter(ex.header, "", nil, time.Now())
	}
	ce.Err = m.wrap(kind, cause)
	return ce
}

// rateLimitKind sorts a 429: a request larger than the token rate limit
// can never pass; an exhausted quota waits for billing, not for time.
func rateLimitKind(code, message string) error {
	switch {
	case strings.HasPrefix(strings.TrimSpace(message), "Request too large"):
		return llm.ErrTooLarge
	case code == "insufficient_quota":
		return llm.ErrPermanent
	}
	return llm.ErrRateLimited
}

// isContextLength reports whether a 400 says the prompt and completion cap
// do not fit the model's context window.
func isContextLength(code, message string) bool {
	return code == "context_length_exceeded" || strings.Contains(strings.ToLower(message), "maximum context length")
}

// apiDetail is the error code and message of an error response: the
// "error" object go-openai decoded, or the body it could not decode.
func apiDetail(err error) (code, message string) {
	var apiErr *oai.APIError
	if errors.As(err, &apiErr) {
		if s, ok := apiErr.Code.(string); ok {
			code = s
		}
		return code, apiErr.Message
	}
	var reqErr *oai.RequestError
	if errors.As(err, &reqErr) {
		return "", string(reqErr.Body)
	}
	return "", ""
}

// wrap makes the error of a failed call: the model, the sentinel, then the
// cause, its text cleared of the API key.
func (m *Model) wrap(kind, cause error) error {
	return fmt.Errorf("openai %s: %w: %w", m.name, kind, m.redact(cause))
}

// redact wraps err so that its text never shows the API key.
func (m *Model) redact(err error) error { return redactedError{err: err, secret: m.key} }

// redactedError is an error whose text never shows a secret (the API key,
// should a server or a library ever echo it).
type redactedError struct {
	err    error
	secret string
}

func (e redactedError) Error() string {
	if e.secret == "" {
		return e.err.Error()
	}
	return strings.ReplaceAll(e.err.Error(), e.secret, "[redacted]")
}

// Unwrap gives errors.Is and errors.As the cause.
func (e redactedError) Unwrap() error { return e.err }
