package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// idemAPI is an API on a database of its own, in RDS Proxy's exec mode.
type idemAPI struct {
	h    http.Handler
	pool *pgxpool.Pool
}

func newIdemAPI(t *testing.T) *idemAPI {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t), Proxy: true, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{{Source: "s", Title: "t", Body: "b"}}); err != nil {
		t.Fatal(err)
	}
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	return &idemAPI{h: httpapi.New(httpapi.Deps{Service: agent}), pool: pool}
}

func (a *idemAPI) key(t *testing.T, user string) string {
	t.Helper()
	k, err := jobs.CreateKey(context.Background(), a.pool, user)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (a *idemAPI) post(apiKey, idemKey, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/gb/research", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if idemKey != "" {
		req.Header.Set(httpapi.IdempotencyKeyHeader, idemKey)
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	return rec
}

func (a *idemAPI) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := a.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func errorField(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var body struct {
		Error struct{ Code, Field string } `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %s: %v", rec.Body, err)
	}
	return body.Error.Field
}

// TestIdempotentPostRetriedConcurrently: the same POST with the same key,
// sent 5 times at once, creates one research and one step job; every
// answer is the first one (the replays say so in a header).
func TestIdempotentPostRetriedConcurrently(t *testing.T) {
	t.Parallel()
	a := newIdemAPI(t)
	alice := a.key(t, "alice")
	const body = `{"topic":"How does sync.Once work?","max_steps":5}`
	recs := make([]*httptest.ResponseRecorder, 5)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Go(func() { recs[i] = a.post(alice, "0b7c6f0e-retry", body) })
	}
	wg.Wait()
	replayed := 0
	for i, rec := range recs {
		if rec.Code != http.StatusAccepted || rec.Body.String() != recs[0].Body.String() ||
			rec.Header().Get("Location") != recs[0].Header().Get("Location") {
			t.Fatalf("answer %d: %d %s %v; want the first answer %s", i, rec.Code, rec.Body, rec.Header(), recs[0].Body)
		}
		if rec.Header().Get(httpapi.ReplayedHeader) == "true" {
			replayed++
		}
	}
	if replayed != 4 {
		t.Errorf("%d answers say they are replays, want 4", replayed)
	}
	if n := a.count(t, "SELECT count(*) FROM gb_agent_research_runs"); n != 1 {
		t.Fatalf("%d researches, want 1", n)
	}
	if n := a.count(t, "SELECT count(*) FROM river_job"); n != 1 {
		t.Fatalf("%d step jobs, want 1", n)
	}
	// Later, the same request with the same key still creates nothing.
	if rec := a.post(alice, "0b7c6f0e-retry", body); rec.Code != http.StatusAccepted || rec.Body.String() != recs[0].Body.String() {
		t.Fatalf("a later retry: %d %s", rec.Code, rec.Body)
	}
	if n := a.count(t, "SELECT count(*) FROM gb_agent_research_runs"); n != 1 {
		t.Fatalf("%d researches after a later retry, want 1", n)
	}
}

func TestIdempotencyKeyRules(t *testing.T) {
	t.Parallel()
	a := newIdemAPI(t)
	alice, bob := a.key(t, "alice"), a.key(t, "bob")
	const body = `{"topic":"What does context.WithCancel return?"}`
	if rec := a.post(alice, "k1", body); rec.Code != http.StatusAccepted {
		t.Fatalf("first: %d %s", rec.Code, rec.Body)
	}
	// The same key for another request is refused, naming the header.
	rec := a.post(alice, "k1", `{"topic":"Another question"}`)
	if rec.Code != http.StatusUnprocessableEntity || errorField(t, rec) != httpapi.IdempotencyKeyHeader {
		t.Fatalf("key reused for another request: %d %s", rec.Code, rec.Body)
	}
	// Keys are per user.
	if rec := a.post(bob, "k1", body); rec.Code != http.StatusAccepted || rec.Header().Get(httpapi.ReplayedHeader) != "" {
		t.Fatalf("bob's k1: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	// Bad keys answer 400 naming the header.
	for _, bad := range []string{strings.Repeat("x", httpapi.IdempotencyKeyMaxLen+1), "has space", "tab\there", "é"} {
		if rec := a.post(alice, bad, body); rec.Code != http.StatusBadRequest || errorField(t, rec) != httpapi.IdempotencyKeyHeader {
			t.Errorf("key %q: %d %s", bad, rec.Code, rec.Body)
		}
	}
	// After 24 hours the key starts a new research.
	if _, err := a.pool.Exec(context.Background(), "UPDATE gb_idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'k1'"); err != nil {
		t.Fatal(err)
	}
	if rec := a.post(alice, "k1", `{"topic":"Another question"}`); rec.Code != http.StatusAccepted || rec.Header().Get(httpapi.ReplayedHeader) != "" {
		t.Fatalf("k1 after 24 hours: %d %s", rec.Code, rec.Body)
	}
	if n := a.count(t, "SELECT count(*) FROM gb_agent_research_runs"); n != 3 {
		t.Fatalf("%d researches, want 3", n)
	}
}

// TestTooManyWorkingRetriesAfter: a 429 carries Retry-After, and a key
// whose request was refused so is not replayed: its retry, once a research
// has ended, creates the research.
func TestTooManyWorkingRetriesAfter(t *testing.T) {
	t.Parallel()
	a := newIdemAPI(t)
	alice := a.key(t, "alice")
	for i := range jobs.MaxWorkingPerUser {
		if rec := a.post(alice, "", `{"topic":"question `+string(rune('a'+i))+`"}`); rec.Code != http.StatusAccepted {
			t.Fatalf("research %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec := a.post(alice, "k-busy", `{"topic":"one too many"}`)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "60" {
		t.Fatalf("a fourth working research: %d Retry-After %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if _, err := a.pool.Exec(context.Background(), "UPDATE gb_agent_research_runs SET status = 'succeeded' WHERE topic = 'question a'"); err != nil {
		t.Fatal(err)
	}
	if rec := a.post(alice, "k-busy", `{"topic":"one too many"}`); rec.Code != http.StatusAccepted || rec.Header().Get(httpapi.ReplayedHeader) != "" {
		t.Fatalf("the retry once a research ended: %d %s", rec.Code, rec.Body)
	}
}
