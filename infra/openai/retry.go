package openai

import (
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/gbresearch/gb/infra/httpwait"
	oai "github.com/sashabaranov/go-openai"
)

// verdict is what to do about a failed attempt.
type verdict int

const (
	retry     verdict = iota // transient: try again after a backoff
	reject                   // the server refused the request: permanent
	malformed                // the answer could not be decoded: permanent
)

// judge sorts the error of one chat-completion attempt. It is called only
// while the caller's context is still live.
func judge(err error) verdict {
	if code := statusCode(err); code != 0 {
		if retryableStatus(code) {
			return retry
		}
		return reject
	}
	var urlErr *url.Error
	var netErr net.Error
	if errors.As(err, &urlErr) || errors.As(err, &netErr) {
		// No answer at all (http.Client wraps all its errors in url.Error),
		// or the connection failed while the body was read.
		return retry
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		// A body cut short: most likely the connection dropped.
		return retry
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr), errors.Is(err, io.EOF):
		// A 2xx whose body is not a chat completion (io.EOF: empty body).
		return malformed
	}
	// Anything else was refused before sending (go-openai's own checks of
	// the model or the request): sending it again would not help.
	return reject
}

// statusCode is the HTTP status of an error response, or 0 when err is not
// one.
func statusCode(err error) int {
	var apiErr *oai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0 {
		return apiErr.HTTPStatusCode
	}
	var reqErr *oai.RequestError
	if errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0 {
		return reqErr.HTTPStatusCode
	}
	return 0
}

func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// backoff is the wait before retry number attempt+1: base·2^attempt capped
// at most, then jittered into [d/2, d) so that clients that failed together
// do not come back together.
func backoff(attempt int, base, most time.Duration) time.Duration {
	d := min(base, most)
	for i := 0; i < attempt && d < most; i++ {
		d = min(2*d, most) // d ≤ most, so 2·d cannot overflow
	}
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half)
}

// retryHint carries a server's Retry-After from the HTTP layer, which sees
// the headers, back to the retry loop, which go-openai's errors do not
// give them to. One hint is made per attempt and travels in its context.
type retryHint struct {
	after time.Duration
	ok    bool
}

type retryHintKey struct{}

// hintingDoer is the HTTP client given to go-openai: it records the
// Retry-After of a retryable error response in the attempt's hint.
type hintingDoer struct {
	client *http.Client
}

// Do implements go-openai's HTTPDoer.
func (d hintingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.client.Do(req)
	if err != nil || !retryableStatus(resp.StatusCode) {
		return resp, err
	}
	if hint, ok := req.Context().Value(retryHintKey{}).(*retryHint); ok {
		hint.after, hint.ok = httpwait.RetryAfter(resp.Header, time.Now())
	}
	return resp, err
}
