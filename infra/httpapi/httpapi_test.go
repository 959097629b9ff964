package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/messenger"
)

type testBundle struct {
	srv        *httptest.Server
	agent      *jobs.Service
	alice, bob string
	// wakes is the API's Notifier (nil behind setupBehindProxy).
	wakes *wakeCounter
}

// wakeCounter is the API's Notifier in the tests: it passes the listener's
// wake-ups on to the long polls and counts those a poll took.
type wakeCounter struct {
	jobs.Notifier
	n atomic.Int64
}

// Subscribe implements jobs.Notifier. Its done func returns once the
// wake-up a poll took is counted, which is before the poll answers.
func (w *wakeCounter) Subscribe(channel string, id int64) (<-chan struct{}, func()) {
	in, done := w.Notifier.Subscribe(channel, id)
	out, stop := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-in:
			case <-stop:
				return
			}
			select {
			case out <- struct{}{}:
				w.n.Add(1)
			case <-stop:
				return
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			done()
		})
	}
}

// taken is how many wake-ups the long polls have taken.
func (w *wakeCounter) taken() int64 { return w.n.Load() }

// eventFallback is the fallback timer of the test API's long polls: far
// above the wake-ups the tests expect, so only a notification meets them.
const eventFallback = 10 * time.Second

// setup serves the API over a fresh database with a one-document dataset.
// No worker runs, so accepted researches stay working.
func setup(t testing.TB) *testBundle {
	t.Helper()
	return setupModel(t, &offline.Model{})
}

// setupModel is setup with the agent's model.
func setupModel(t testing.TB, model llm.Model) *testBundle {
	t.Helper()
	ctx := context.Background()
	// The API runs behind RDS Proxy in production: test it in the same
	// exec query mode, with no prepared statements.
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t), Proxy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, "godoc", []kb.Document{{Source: "s", Title: "t", Body: "b"}}); err != nil {
		t.Fatal(err)
	}
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	b := &testBundle{agent: agent}
	for _, u := range []*string{&b.alice, &b.bob} {
		key, err := jobs.CreateKey(ctx, pool, fmt.Sprintf("user%p", u))
		if err != nil {
			t.Fatal(err)
		}
		*u = key
	}
	listener := messenger.NewListener(pool, nil)
	if err := listener.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Stop(context.Background()) })
	b.wakes = &wakeCounter{Notifier: listener}
	b.srv = httptest.NewServer(validated(t, httpapi.New(httpapi.Deps{Service: agent, Notifier: b.wakes,
		EventFallback: eventFallback})))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *testBundle) call(t testing.TB, key, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return resp.StatusCode, out
}

// callAtOnce makes n calls released together, the i-th with body(i), and
// returns their codes and answers in that order.
func (b *testBundle) callAtOnce(t testing.TB, key, method, path string, n int, body func(i int) string) ([]int, []map[string]any) {
	codes := make([]int, n)
	bodies := make([]map[string]any, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			codes[i], bodies[i] = b.call(t, key, method, path, body(i))
		}()
	}
	close(start)
	wg.Wait()
	return codes, bodies
}

func TestFiftyConcurrentPostsAcceptExactlyThree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var wg sync.WaitGroup
	codes := make(chan int, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			code, _ := b.call(t, b.alice, "POST", "/v1/gb/research", fmt.Sprintf(`{"topic":"question %d"}`, i))
			codes <- code
		}(i)
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[http.StatusAccepted] != 3 || count[http.StatusTooManyRequests] != 47 {
		t.Fatalf("want 3 accepted and 47 refused, got %v", count)
	}
	code, body := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"one more"}`)
	msg := fmt.Sprint(body["error"])
	if code != http.StatusTooManyRequests || !strings.Contains(msg, "3 researches working") {
		t.Fatalf("4th: %d %s", code, msg)
	}
	// Another user is not limited by alice's researches.
	if code, _ := b.call(t, b.bob, "POST", "/v1/gb/research", `{"topic":"bob's question"}`); code != http.StatusAccepted {
		t.Fatalf("bob got %d", code)
	}
}

func TestBadInputIsRefusedWithTheField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct{ body, field string }{
		{`{"topic":`, ""},
		{`{"topic":"x","colour":"red"}`, "colour"},
		{`{"topic":""}`, "topic"},
		{`{"topic":"   "}`, "topic"},
		{`{"topic":"` + strings.Repeat("é", 2001) + `"}`, "topic"},
		{`{"topic":"x","max_steps":41}`, "max_steps"},
		{`{"topic":"x","max_steps":-1}`, "max_steps"},
		{`{"topic":"x","max_steps":"ten"}`, "max_steps"},
		{`{"topic":"x","dataset":"nope"}`, "dataset"},
		{`{"topic":"x"} {}`, ""},
		{`{"topic":"a\u0000b"}`, "topic"},
	}
	for _, c := range cases {
		code, body := b.call(t, b.alice, "POST", "/v1/gb/research", c.body)
		e, _ := body["error"].(map[string]any)
		if code != http.StatusBadRequest || e == nil || fmt.Sprint(e["field"]) != c.field && c.field != "" {
			t.Errorf("%.60s: got %d %v, want 400 naming %q", c.body, code, body, c.field)
		}
	}
	big := `{"topic":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`
	if code, _ := b.call(t, b.alice, "POST", "/v1/gb/research", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: got %d, want 413", code)
	}
	if code, _ := b.call(t, b.alice, "GET", "/v1/gb/research?status=bogus", ""); code != http.StatusBadRequest {
		t.Errorf("bad status filter: got %d", code)
	}
	if code, _ := b.call(t, b.alice, "GET", "/v1/gb/research?cursor=9999999999", ""); code != http.StatusOK {
		t.Errorf("a cursor past int32: got %d", code)
	}
}

func TestOwnershipAndAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"alice's question","max_steps":5}`)
	if code != http.StatusAccepted || run["status"] != "queued" || run["max_steps"] != float64(5) {
		t.Fatalf("create: %d %v", code, run)
	}
	id := fmt.Sprint(run["id"])
	if code, _ := b.call(t, "", "GET", "/v1/gb/research/"+id, ""); code != http.StatusUnauthorized {
		t.Errorf("no key: %d", code)
	}
	if code, _ := b.call(t, "gb_wrong", "GET", "/v1/gb/research/"+id, ""); code != http.StatusUnauthorized {
		t.Errorf("bad key: %d", code)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if code, _ := b.call(t, b.bob, m, "/v1/gb/research/"+id, ""); code != http.StatusNotFound {
			t.Errorf("bob %s alice's run: %d, want 404", m, code)
		}
	}
	if code, _ := b.call(t, b.bob, "POST", "/v1/gb/research/"+id+"/cancel", ""); code != http.StatusNotFound {
		t.Errorf("bob cancels alice's run: %d", code)
	}
	code, got := b.call(t, b.alice, "GET", "/v1/gb/research/"+id, "")
	if code != http.StatusOK || got["topic"] != "alice's question" || got["states"] == nil {
		t.Fatalf("get: %d %v", code, got)
	}
	_, list := b.call(t, b.bob, "GET", "/v1/gb/research", "")
	if runs := list["runs"].([]any); len(runs) != 0 {
		t.Fatalf("bob sees %d runs", len(runs))
	}
	if code, _ := b.call(t, b.alice, "DELETE", "/v1/gb/research/"+id, ""); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := b.call(t, b.alice, "GET", "/v1/gb/research/"+id, ""); code != http.StatusNotFound {
		t.Fatalf("after delete: %d", code)
	}
	var jobsLeft int
	if err := b.agent.Pool().QueryRow(context.Background(),
		"SELECT count(*) FROM river_job WHERE finalized_at IS NULL").Scan(&jobsLeft); err != nil {
		t.Fatal(err)
	}
	if jobsLeft != 0 {
		t.Fatalf("%d jobs left after delete", jobsLeft)
	}
}

func TestListPagination(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := 0; i < 3; i++ {
		code, run := b.call(t, b.alice, "POST", "/v1/gb/research", fmt.Sprintf(`{"topic":"q%d"}`, i))
		if code != http.StatusAccepted {
			t.Fatal(code)
		}
		if code, _ := b.call(t, b.alice, "POST", fmt.Sprintf("/v1/gb/research/%v/cancel", run["id"]), ""); code != http.StatusOK {
			t.Fatalf("cancel: %d", code)
		}
	}
	_, page := b.call(t, b.alice, "GET", "/v1/gb/research?limit=2", "")
	runs := page["runs"].([]any)
	if len(runs) != 2 || runs[0].(map[string]any)["topic"] != "q2" || page["next_cursor"] == nil {
		t.Fatalf("page 1: %v", page)
	}
	_, page2 := b.call(t, b.alice, "GET", "/v1/gb/research?limit=2&cursor="+fmt.Sprint(page["next_cursor"]), "")
	runs2 := page2["runs"].([]any)
	if len(runs2) != 1 || runs2[0].(map[string]any)["topic"] != "q0" || page2["next_cursor"] != nil {
		t.Fatalf("page 2: %v", page2)
	}
	_, failed := b.call(t, b.alice, "GET", "/v1/gb/research?status=failed", "")
	if n := len(failed["runs"].([]any)); n != 3 {
		t.Fatalf("status filter: %d runs", n)
	}
}
