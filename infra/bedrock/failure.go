package bedrock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

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
//     on-demand quotas): ErrRateLimited;
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
	return ce
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
