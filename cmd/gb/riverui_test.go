package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// TestRiverUIIsMountedForLoopbackOnly mounts River UI in front of an API
// and checks that it serves its page and its API at /riverui/ to this
// machine, refuses other clients, and leaves the API's routes alone.
func TestRiverUIIsMountedForLoopbackOnly(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "api") })
	s := &stack{agent: agent, api: api, logger: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.mountRiverUI(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.api)
	defer srv.Close()
	for path, want := range map[string]string{
		"/riverui/":                         "<html",
		"/riverui/api/jobs?state=available": `"data"`,
		"/v1/gb/research":                   "api",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(strings.ToLower(string(body)), strings.ToLower(want)) {
			t.Errorf("GET %s: %d %.200s; want 200 with %q", path, resp.StatusCode, body, want)
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/riverui/", nil)
	req.RemoteAddr = "203.0.113.7:4000"
	s.api.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("River UI answered %d to a remote client, want 403", rec.Code)
	}
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080"} {
		if err := checkLoopback(addr); err != nil {
			t.Errorf("checkLoopback(%q): %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.168.1.2:8080"} {
		if err := checkLoopback(addr); err == nil {
			t.Errorf("checkLoopback(%q) accepted a non-loopback address", addr)
		}
	}
}

// TestRiverUIRefusesOtherHostsAndCrossOriginRequests checks that River UI,
// served on a loopback address, answers only requests that name this
// machine in their Host header (421 to Host: evil.example, as a page on a
// rebound DNS name would send, and to another port), refuses a
// cross-origin POST /riverui/api/jobs/cancel (403, whether the browser
// says so with Sec-Fetch-Site or only with its Origin), and that none of
// them cancels the job, while the same request from River UI's own page
// does.
func TestRiverUIRefusesOtherHostsAndCrossOriginRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.CreateKey(ctx, pool, "owner"); err != nil {
		t.Fatal(err)
	}
	uid, err := jobs.UserID(ctx, pool, "owner")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{{Source: "s", Title: "Goroutines", Body: "A goroutine runs."}}); err != nil {
		t.Fatal(err)
	}
	// No worker runs: the research's first step job waits, available.
	if _, _, err := agent.StartResearch(ctx, jobs.StartParams{UserID: uid, Topic: "What is a goroutine?"}); err != nil {
		t.Fatal(err)
	}
	var jobID int64
	if err := pool.QueryRow(ctx, "SELECT id FROM river_job WHERE kind = $1", jobs.StepKind).Scan(&jobID); err != nil {
		t.Fatal(err)
	}
	s := &stack{agent: agent, api: http.NotFoundHandler(), logger: slog.New(slog.DiscardHandler)}
	uiCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.mountRiverUI(uiCtx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.api)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := strings.Cut(host, ":")

	send := func(method, path, host string, headers map[string]string) (int, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"ids":["` + strconv.FormatInt(jobID, 10) + `"]}`)
		}
		req, err := http.NewRequest(method, srv.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	jobState := func() string {
		t.Helper()
		var state string
		if err := pool.QueryRow(ctx, "SELECT state FROM river_job WHERE id = $1", jobID).Scan(&state); err != nil {
			t.Fatal(err)
		}
		return state
	}

	const cancelPath = "/riverui/api/jobs/cancel"
	evil := map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
	refused := []struct {
		what, method, path, host string
		headers                  map[string]string
		want                     int
	}{
		{"GET with Host: evil.example", "GET", "/riverui/api/jobs?state=available", "evil.example", nil, http.StatusMisdirectedRequest},
		{"the page with Host: evil.example:" + port, "GET", "/riverui/", "evil.example:" + port, nil, http.StatusMisdirectedRequest},
		{"cancel with Host: evil.example", "POST", cancelPath, "evil.example", evil, http.StatusMisdirectedRequest},
		{"GET on another port of localhost", "GET", "/riverui/api/jobs?state=available", "localhost:1", nil, http.StatusMisdirectedRequest},
		{"cross-site cancel", "POST", cancelPath, host, evil, http.StatusForbidden},
		{"same-site cancel from another port", "POST", cancelPath, host,
			map[string]string{"Origin": "http://localhost:1", "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"cancel with only a foreign Origin", "POST", cancelPath, host, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
	}
	for _, c := range refused {
		if code, body := send(c.method, c.path, c.host, c.headers); code != c.want {
			t.Errorf("%s: %d %.200s; want %d", c.what, code, body, c.want)
		}
	}
	if st := jobState(); st != "available" {
		t.Fatalf("after the refused requests the job is %s, want available", st)
	}

	for _, h := range []string{host, "localhost:" + port} {
		if code, body := send("GET", "/riverui/api/jobs?state=available", h, map[string]string{"Sec-Fetch-Site": "same-origin"}); code != http.StatusOK ||
			!strings.Contains(body, strconv.FormatInt(jobID, 10)) {
			t.Errorf("GET with Host: %s: %d %.200s; want 200 listing job %d", h, code, body, jobID)
		}
	}
	if code, body := send("POST", cancelPath, host, map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}); code != http.StatusOK {
		t.Fatalf("same-origin cancel: %d %.200s; want 200", code, body)
	}
	if st := jobState(); st != "cancelled" {
		t.Errorf("after the same-origin cancel the job is %s, want cancelled", st)
	}
}
