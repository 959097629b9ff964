package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
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
