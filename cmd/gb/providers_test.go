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
