package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
		hint.after, hint.ok = retryAfter(resp.Header, time.Now())
	}
	return resp, err
}

// retryAfter reads how long the server asked to wait: retry-after-ms
// (milliseconds, sent by OpenAI) or Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e6 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// sleep waits for d or until ctx is done, whichever comes first, and
// reports whether the full wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		// No point waiting for a retry the deadline will not allow.
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
