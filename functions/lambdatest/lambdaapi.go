package lambdatest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// LambdaAPI stands in for the Lambda API that kicks call: it records each
// Invoke and accepts it as Lambda accepts an asynchronous one (202), or
// refuses it when told to fail. Point a function at it with
// AWS_ENDPOINT_URL_LAMBDA=URL.
type LambdaAPI struct {
	// URL is the stand-in's base URL.
	URL  string
	mu   sync.Mutex
	got  []Invoke
	fail atomic.Bool
}

// Invoke is one recorded call.
type Invoke struct {
	// Path is /2015-03-31/functions/NAME/invocations.
	Path string
	// InvocationType is the X-Amz-Invocation-Type header ("Event" for an
	// asynchronous invocation).
	InvocationType string
	// Payload is the decoded event.
	Payload map[string]any
}

// NewLambdaAPI starts a LambdaAPI, stopped when the test ends.
func NewLambdaAPI(t testing.TB) *LambdaAPI {
	t.Helper()
	api := &LambdaAPI{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p map[string]any
		_ = json.Unmarshal(body, &p)
		api.mu.Lock()
		api.got = append(api.got, Invoke{Path: r.URL.Path, InvocationType: r.Header.Get("X-Amz-Invocation-Type"), Payload: p})
		api.mu.Unlock()
		if api.fail.Load() {
			w.Header().Set("X-Amzn-ErrorType", "AccessDeniedException")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"Type":"User","message":"not allowed in this test"}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	api.URL = srv.URL
	return api
}

// Fail makes the next calls fail (true) or succeed (false).
func (a *LambdaAPI) Fail(fail bool) { a.fail.Store(fail) }

// Calls returns the calls so far.
func (a *LambdaAPI) Calls() []Invoke {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Invoke(nil), a.got...)
}

// Env returns the settings that send a function's AWS calls to a and sign
// them with test credentials.
func (a *LambdaAPI) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_LAMBDA": a.URL,
		"AWS_REGION":              "eu-west-1",
		"AWS_ACCESS_KEY_ID":       "AKIDLAMBDATEST",
		"AWS_SECRET_ACCESS_KEY":   "lambdatest-secret",
	}
}
