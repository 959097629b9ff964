package openaifake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Kinds of Event, one for each way a request ends.
const (
	KindOK            = "ok"
	KindUnauthorized  = "unauthorized"
	KindInvalidURL    = "invalid_url"
	KindBadRequest    = "bad_request"
	KindModelNotFound = "model_not_found"
	KindOverWindow    = "context_length_exceeded"
	KindRPM           = "rate_limit_rpm"
	KindTPM           = "rate_limit_tpm"
	KindTooLarge      = "request_too_large"
	KindServerError   = "server_error"
	KindOverloaded    = "overloaded"
	KindTimeout       = "timeout"
	KindGarbage       = "garbage"
)

// apiError is a refusal as OpenAI writes it: an HTTP status and the body
// {"error":{"message","type","param","code"}}.
type apiError struct {
	status  int
	kind    string // the Event kind
	message string
	typ     string
	param   string // "" is written as null
	code    string // "" is written as null
	// retryAfter is the wait a 429 asks for; 0 sends no retry-after.
	retryAfter time.Duration
}

// wireError is the body of an error response.
type wireError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// body is the JSON of the error response.
func (e *apiError) body() []byte {
	var w wireError
	w.Error.Message, w.Error.Type = e.message, e.typ
	w.Error.Param, w.Error.Code = nullable(e.param), nullable(e.code)
	b, err := json.Marshal(w)
	if err != nil {
		panic(fmt.Errorf("openaifake: encoding an error body: %w", err)) // cannot happen: strings only
	}
	return b
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// badRequest is a 400 invalid_request_error.
func badRequest(param, code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: KindBadRequest, typ: "invalid_request_error",
		param: param, code: code, message: fmt.Sprintf(format, args...)}
}

func errNoKey() *apiError {
	return &apiError{status: http.StatusUnauthorized, kind: KindUnauthorized, typ: "invalid_request_error",
		message: "You didn't provide an API key. You need to provide your API key in an Authorization header " +
			"using Bearer auth (i.e. Authorization: Bearer YOUR_KEY). You can obtain an API key from " +
			"https://platform.openai.com/account/api-keys."}
}

func errBadKey(key string) *apiError {
	return &apiError{status: http.StatusUnauthorized, kind: KindUnauthorized, typ: "invalid_request_error",
		code: "invalid_api_key",
		message: fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at "+
			"https://platform.openai.com/account/api-keys.", maskKey(key))}
}

// maskKey shows no more of a key than its first three and last four
// characters, as OpenAI does.
func maskKey(key string) string {
	if len(key) < 12 {
		return "********"
	}
	return key[:3] + "*************" + key[len(key)-4:]
}

func errInvalidURL(r *http.Request) *apiError {
	return &apiError{status: http.StatusNotFound, kind: KindInvalidURL, typ: "invalid_request_error",
		message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)}
}

func errModelNotFound(model string) *apiError {
	return &apiError{status: http.StatusNotFound, kind: KindModelNotFound, typ: "invalid_request_error",
		code:    "model_not_found",
		message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)}
}

func errContextLength(window, prompt, completion int) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: KindOverWindow, typ: "invalid_request_error",
		param: "messages", code: "context_length_exceeded",
		message: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens "+
			"(%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			window, prompt+completion, prompt, completion)}
}

func errUnsupportedParameter(param, hint string) *apiError {
	return badRequest(param, "unsupported_parameter",
		"Unsupported parameter: '%s' is not supported with this model.%s", param, hint)
}

func errServer() *apiError {
	return &apiError{status: http.StatusInternalServerError, kind: KindServerError, typ: "server_error",
		message: "The server had an error while processing your request. Sorry about that!"}
}

func errOverloaded() *apiError {
	return &apiError{status: http.StatusServiceUnavailable, kind: KindOverloaded, typ: "server_error",
		message: "That model is currently overloaded with other requests. You can retry your request, " +
			"or contact us through our help center at help.openai.com if the error persists."}
}

const rateLimitsURL = "Visit https://platform.openai.com/account/rate-limits to learn more."

// errRateLimited is the 429 of a request the bucket named by unit
// ("requests" or "tokens") cannot hold yet.
func errRateLimited(model, org string, unit string, limit, used, requested int, wait time.Duration) *apiError {
	kind, per := KindRPM, "requests per min (RPM)"
	if unit == "tokens" {
		kind, per = KindTPM, "tokens per min (TPM)"
	}
	return &apiError{status: http.StatusTooManyRequests, kind: kind, typ: unit, code: "rate_limit_exceeded",
		retryAfter: wait,
		message: fmt.Sprintf("Rate limit reached for %s in organization %s on %s: Limit %d, Used %d, Requested %d. "+
			"Please try again in %s. %s", model, org, per, limit, used, requested, formatDuration(wait), rateLimitsURL)}
}

// errTooLarge is the 429 of a request that asks more tokens than the TPM
// limit holds: waiting cannot help, so it has no retry-after.
func errTooLarge(model, org string, limit, requested int) *apiError {
	return &apiError{status: http.StatusTooManyRequests, kind: KindTooLarge, typ: "tokens", code: "rate_limit_exceeded",
		message: fmt.Sprintf("Request too large for %s in organization %s on tokens per min (TPM): Limit %d, "+
			"Requested %d. The input or output tokens must be reduced in order to run successfully. %s",
			model, org, limit, requested, rateLimitsURL)}
}

// formatDuration writes d as OpenAI does ("1s", "644ms", "9.816s",
// "6m0s"): rounded up to the millisecond.
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return ceilDuration(d, time.Millisecond).String()
}

// ceilDuration rounds d up to a multiple of unit.
func ceilDuration(d, unit time.Duration) time.Duration {
	return (d + unit - 1) / unit * unit
}
