package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
)

// gb providers shows each model's breaker from the database, as a table
// and as JSON: an open one with its failures, probes and last error.
func TestProvidersShowsTheBreakers(t *testing.T) {
	pool := dbtest.NewPool(t)
	t.Setenv("DATABASE_URL", pool.Config().ConnString())
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO gb_provider_breakers (key, provider, failures, opened_at, first_failed_at,
		last_failed_at, first_error, last_error, next_probe_at, probes)
		VALUES ('gpt-4o-mini', 'openai', 7, now() - interval '90 seconds', now() - interval '95 seconds', now(),
			'503 first', '529 Overloaded', now() + interval '20 seconds', 4),
			('gpt-4.1-mini', 'openai', 0, NULL, NULL, NULL, '', '', '-infinity', 0)`); err != nil {
		t.Fatal(err)
	}
	run := func(a ...string) string {
		t.Helper()
		cmd := providersCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(a)
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	table := run()
	for _, want := range []string{"gpt-4o-mini", "open", "529 Overloaded", "gpt-4.1-mini", "closed"} {
		if !strings.Contains(table, want) {
			t.Errorf("table does not say %q:\n%s", want, table)
		}
	}
	var br []jobs.Breaker
	if err := json.Unmarshal([]byte(run("-o", "json")), &br); err != nil || len(br) != 2 {
		t.Fatalf("json: %v %+v", err, br)
	}
	open := br[1]
	if open.Model != "gpt-4o-mini" || open.State != jobs.BreakerOpen || open.Failures != 7 || open.Probes != 4 ||
		open.NextProbe == nil || open.FirstError != "503 first" {
		t.Errorf("open breaker %+v", open)
	}
}

// A run waiting for its provider says which, since when, how often it
// tried, the provider's last error and the next try.
func TestProviderWaitLine(t *testing.T) {
	t.Parallel()
	since := time.Now().Add(-2 * time.Minute)
	line := providerWaitLine(&jobs.ProviderWait{Provider: "openai", Model: "gpt-4o-mini", Since: since,
		LastError: "503 Service\nUnavailable", Tries: 6, NextTry: since.Add(3 * time.Minute)})
	for _, want := range []string{"openai gpt-4o-mini", "6 tries", "503 Service Unavailable", "next try " + since.Add(3*time.Minute).Local().Format("15:04:05")} {
		if !strings.Contains(line, want) {
			t.Errorf("%q does not say %q", line, want)
		}
	}
}

// gb research get shows what a run waiting for its provider waits for, and
// follow says when a run starts waiting.
func TestRunWaitingForItsProviderIsShown(t *testing.T) {
	t.Parallel()
	since := time.Now().Add(-time.Minute)
	d := &jobs.RunDetails{Run: &jobs.Run{ID: 7, Status: "working", State: jobs.StateWaitingProvider,
		ProviderWait: &jobs.ProviderWait{Provider: "openai", Model: "gpt-4o-mini", Since: since, LastError: "529 Overloaded",
			Tries: 4, NextTry: since.Add(90 * time.Second)}}}
	var b strings.Builder
	if err := printDetails(&b, d); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, "waiting_provider") || !strings.Contains(got, "529 Overloaded") ||
		!strings.Contains(got, "4 tries") {
		t.Errorf("get view lacks the provider wait:\n%s", got)
	}
	data, _ := json.Marshal(map[string]any{"provider": "openai", "model": "gpt-4o-mini", "error": "503 down",
		"next_try": since.Add(time.Minute)})
	b.Reset()
	printProviderWaits(&b, []jobs.Event{{RunID: 7, Kind: jobs.EventStep}, {RunID: 7, Kind: jobs.EventWaitingProvider, Data: data}})
	if got := b.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "run 7 waits for its provider") ||
		!strings.Contains(got, "503 down") {
		t.Errorf("follow printed %q, want one line for the waiting_provider event", got)
	}
}
