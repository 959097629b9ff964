package search

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// fake is a provider's fake server: it records each request and answers
// them in turn from its script (the last answer repeats).
type fake struct {
	t       *testing.T
	mu      sync.Mutex
	reqs    []*http.Request
	bodies  [][]byte
	answers []answer
	srv     *httptest.Server
}

// answer is one scripted response.
type answer struct {
	status int
	header map[string]string
	body   string
	ctype  string
}

func newFake(t *testing.T, answers ...answer) *fake {
	f := &fake{t: t, answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.bodies = append(f.bodies, body)
	a := f.answers[min(len(f.reqs), len(f.answers))-1]
	f.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", cmpOr(a.ctype, "application/json"))
	w.WriteHeader(cmpOr(a.status, http.StatusOK))
	io.WriteString(w, a.body)
}

// requests returns what the server was sent.
func (f *fake) requests() ([]*http.Request, [][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs, f.bodies
}

// opts points a provider at the fake, with fast retries.
func (f *fake) opts() Options {
	return Options{BaseURL: f.srv.URL, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// rateLimited is a 429 asking to come back at once.
func rateLimited(body string) answer {
	return answer{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "0"}, body: body}
}
