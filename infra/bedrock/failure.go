package bedrock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	smithy "github.com/aws/smithy-go"

	"github.com/gbresearch/gb/jobs/llm"
)

// failure sorts the error of a Converse call into a *llm.CallError
// wrapping one of llm's sentinels:
//   - no HTTP request made (the SDK refused the input, or could not sign
//     it): ErrPermanent;
//   - no error response, because the caller's context ended, the network
//     failed or a 2xx body could not be decoded: ErrTransient;
//   - ThrottlingException and ServiceQuotaExceededException (Bedrock's
//     on-demand quotas): ErrRateLimited, with a RetryAfter that backs off
//     over throttles in a row (throttleWait);
//   - ModelNotReadyException, ModelTimeoutException, ModelErrorException
//     (the model failed on this request), ServiceUnavailableException,
//     InternalServerException, any 5xx and a 408: ErrTransient;
//   - a ValidationException that says the input is too long for the
//     model: ErrContextLength;
//   - AccessDeniedException, ResourceNotFoundException, any other
//     ValidationException or 4xx: ErrPermanent.
//
// Sent says whether the request reached Bedrock, which may have billed it.
func (m *Model) failure(ctx context.Context, ex *exchange, cause error) *llm.CallError {
	ce := &llm.CallError{Sent: ex.reached()}
	status := int(ex.status.Load())
	var respErr *awshttp.ResponseError
	if errors.As(cause, &respErr) && respErr.HTTPStatusCode() != 0 {
		status = respErr.HTTPStatusCode()
	}
	code, message := "", ""
	var apiErr smithy.APIError
	if errors.As(cause, &apiErr) {
		code, message = apiErr.ErrorCode(), apiErr.ErrorMessage()
	}
	kind := llm.ErrPermanent
	switch {
	case !ex.called.Load():
		// Refused before any request was made.
	case status < http.StatusBadRequest && ctx.Err() != nil:
		ce.Err = fmt.Errorf("bedrock %s: %w: the caller's context ended (%w): %w",
			m.name, llm.ErrTransient, ctx.Err(), cause)
		return ce
	case status < http.StatusBadRequest:
		kind = llm.ErrTransient
	default:
		kind = errorKind(code, message, status)
	}
	ce.Err = fmt.Errorf("bedrock %s: %w: %w", m.name, kind, cause)
	if kind == llm.ErrRateLimited {
		ce.RetryAfter = throttleWait(int(m.throttled.Add(1)))
	}
	return ce
}

// Backoff of throttled calls. Bedrock's ThrottlingException says nothing
// of when to come back, so each throttle in a row doubles the wait from
// throttleBase up to throttleCap. The wait is the call's RetryAfter: the
// step puts its job back for that long and the shared limiter holds every
// worker's calls of the model until then (gb_rate_limits.blocked_until),
// so that a throttled quota is not hammered once a second. A breaker over
// the provider's transient failures takes the same errors (ErrRateLimited,
// ErrTransient) from here; nothing of it is decided in this package.
const (
	throttleBase = time.Second
	throttleCap  = time.Minute
)

// throttleWait is the wait after the n-th throttle in a row: throttleBase
// doubled n-1 times, at most throttleCap, with jitter over its upper half
// so that workers throttled together do not come back together. It is a
// formula of the model's shared count of throttles in a row rather than a
// backoff object: the count is shared by the concurrent calls of the model
// (a backoff object is not safe for that), and the wait it gives is not
// slept here but persisted by the limiter as the job's next time.
func throttleWait(n int) time.Duration {
	d := min(throttleBase<<min(max(n-1, 0), 10), throttleCap)
	return d/2 + rand.N(d/2+1)
}

// errorKind sorts an error response by its type, then by its status.
func errorKind(code, message string, status int) error {
	switch code {
	case "ThrottlingException", "ServiceQuotaExceededException":
		return llm.ErrRateLimited
	case "ModelNotReadyException", "ModelTimeoutException", "ModelErrorException", "ServiceUnavailableException",
		"InternalServerException":
		return llm.ErrTransient
	case "ValidationException":
		if isContextLength(message) {
			return llm.ErrContextLength
		}
		return llm.ErrPermanent
	case "AccessDeniedException", "ResourceNotFoundException":
		return llm.ErrPermanent
	}
	switch {
	case status == http.StatusTooManyRequests:
		return llm.ErrRateLimited
	case status == http.StatusRequestTimeout, status >= http.StatusInternalServerError:
		return llm.ErrTransient
	}
	return llm.ErrPermanent
}

// contextLengthPhrases are what Bedrock's ValidationExceptions say when the
// prompt and the completion cap do not fit the model's window, in the
// words of the models behind it ("Input is too long for requested model",
// "prompt is too long", "input length and max_tokens exceed context
// limit", "exceeds the maximum context length"...).
var contextLengthPhrases = []string{
	"too long", "too many input tokens", "too many tokens", "context length", "context window",
	"context limit", "maximum context",
}

// isContextLength reports whether a ValidationException's message is about
// the size of the input.
func isContextLength(message string) bool {
	m := strings.ToLower(message)
	for _, p := range contextLengthPhrases {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}
