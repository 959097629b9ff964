package main

import (
	"context"
	"encoding/json"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/functions/scheduler/schedule"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// TestSchedulerUnderEmulator runs the scheduler bootstrap under
// aws-lambda-rie: a schedule's event starts a research, the same event
// delivered again starts none, and a bad event fails with an error naming
// the field.
func TestSchedulerUnderEmulator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool, seed := lambdatest.SeededDB(t)
	fn := lambdatest.Start(t, lambdatest.Build(t, "functions/scheduler"), map[string]string{
		"DATABASE_URL":                url,
		"AWS_LAMBDA_FUNCTION_TIMEOUT": "30",
		"AWS_LAMBDA_LOG_FORMAT":       "JSON",
		"AWS_LAMBDA_LOG_LEVEL":        "INFO",
	})
	event := lambdatest.Event(t, "testdata/scheduled.json", map[string]string{"USER": seed.User})

	deliver := func(t *testing.T) schedule.Result {
		t.Helper()
		inv := fn.Invoke(t, event)
		if inv.FunctionError != "" {
			t.Fatalf("delivery failed: %s", inv.Body)
		}
		var res schedule.Result
		if err := json.Unmarshal(inv.Body, &res); err != nil {
			t.Fatalf("result %s: %v", inv.Body, err)
		}
		return res
	}
	first := deliver(t)
	if !first.Created || first.RunID == 0 {
		t.Fatalf("first delivery: %+v", first)
	}
	again := deliver(t)
	if again.Created || again.RunID != first.RunID {
		t.Fatalf("repeated delivery: %+v, want run %d not created", again, first.RunID)
	}
	var runs int
	var key string
	if err := pool.QueryRow(ctx, `SELECT count(*), max(schedule_key) FROM gb_agent_research_runs
		WHERE user_id = $1`, seed.UserID).Scan(&runs, &key); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || key != "alice/arn:aws:scheduler:eu-west-1:123456789012:schedule/default/gb-daily-context@2026-11-30T06:00:00Z" {
		t.Fatalf("%d runs with key %q", runs, key)
	}

	// An invalid event is acknowledged (no function error, so Lambda does
	// not retry it) with the field at fault, in the result and in one
	// error log line.
	for fixture, field := range map[string]string{"unknown-field.json": "topc", "unknown-user.json": "user"} {
		before := strings.Count(fn.Logs(), `"field":"`+field+`"`)
		inv := fn.Invoke(t, lambdatest.Event(t, "testdata/"+fixture, map[string]string{"USER": seed.User}))
		var res schedule.Result
		if err := json.Unmarshal(inv.Body, &res); err != nil || inv.FunctionError != "" ||
			res.Invalid == nil || res.Invalid.Field != field || res.RunID != 0 {
			t.Fatalf("%s: want it acknowledged as invalid on %s, got %q %s", fixture, field, inv.FunctionError, inv.Body)
		}
		waitFor(t, fn, func(logs string) bool { return strings.Count(logs, `"field":"`+field+`"`) == before+1 })
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM gb_agent_research_runs").Scan(&runs); err != nil || runs != 1 {
		t.Fatalf("%d runs after the invalid events (%v), want 1", runs, err)
	}
}

// TestSchedulerRetriesWhenTheDatabaseIsDown runs the scheduler bootstrap
// through a TCP proxy to its database and takes the proxy down: a delivery
// then fails the invocation, which makes Lambda retry it (and keep it in
// the on-failure destination after the last attempt); once the database
// is back, the retry starts the research.
func TestSchedulerRetriesWhenTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL, pool, seed := lambdatest.SeededDB(t)
	u, err := neturl.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := lambdatest.NewTCPProxy(t, u.Host)
	u.Host = proxy.Addr
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	fn := lambdatest.Start(t, lambdatest.Build(t, "functions/scheduler"), map[string]string{
		"DATABASE_URL":                u.String(),
		"AWS_LAMBDA_FUNCTION_TIMEOUT": "30",
		"AWS_LAMBDA_LOG_FORMAT":       "JSON",
		"AWS_LAMBDA_LOG_LEVEL":        "INFO",
	})
	event := lambdatest.Event(t, "testdata/scheduled.json", map[string]string{"USER": seed.User})

	// A first invocation starts the function (cold start) while the
	// database is up.
	if inv := fn.Invoke(t, lambdatest.Event(t, "testdata/unknown-user.json", nil)); inv.FunctionError != "" {
		t.Fatalf("warm-up: %s", inv.Body)
	}
	proxy.Down()
	inv := fn.Invoke(t, event)
	if inv.FunctionError == "" {
		t.Fatalf("with the database down the invocation succeeded: %s", inv.Body)
	}
	waitFor(t, fn, func(logs string) bool { return strings.Contains(logs, "Lambda retries it") })

	proxy.Up()
	inv = fn.Invoke(t, event) // Lambda's retry
	var res schedule.Result
	if err := json.Unmarshal(inv.Body, &res); err != nil || inv.FunctionError != "" || !res.Created {
		t.Fatalf("the retry after the outage: %q %s", inv.FunctionError, inv.Body)
	}
	var runs int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM gb_agent_research_runs").Scan(&runs); err != nil || runs != 1 {
		t.Fatalf("%d runs (%v), want the one the retry started", runs, err)
	}
}

// waitFor waits until the function's logs satisfy ok.
func waitFor(t *testing.T, fn *lambdatest.Function, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok(fn.Logs()) {
		if time.Now().After(deadline) {
			t.Fatalf("the logs never showed what was expected:\n%s", fn.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
