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
// delivered again starts none, nor does one naming the same instant in
// another way, and an event that can never succeed is acknowledged at
// once with what is wrong.
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
	vars := map[string]string{"USER": seed.User}

	deliver := func(t *testing.T, fixture string) schedule.Result {
		t.Helper()
		inv := fn.Invoke(t, lambdatest.Event(t, "testdata/"+fixture, vars))
		if inv.FunctionError != "" {
			t.Fatalf("delivery of %s failed: %s", fixture, inv.Body)
		}
		var res schedule.Result
		if err := json.Unmarshal(inv.Body, &res); err != nil {
			t.Fatalf("result %s: %v", inv.Body, err)
		}
		return res
	}
	first := deliver(t, "scheduled.json")
	if !first.Created || first.RunID == 0 {
		t.Fatalf("first delivery: %+v", first)
	}
	// The same delivery again, and the same instant as +00:00 and as
	// 07:00:00.000+01:00.
	for _, fixture := range []string{"scheduled.json", "scheduled-offset.json", "scheduled-fraction.json"} {
		if again := deliver(t, fixture); again.Created || again.RunID != first.RunID {
			t.Fatalf("%s: %+v, want run %d not created", fixture, again, first.RunID)
		}
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

	// What can never succeed is acknowledged (no function error, so Lambda
	// does not retry it) with what is wrong, in the result and in one
	// warning.
	huge := strings.Replace(string(lambdatest.Event(t, "testdata/scheduled.json", vars)),
		"arn:aws:scheduler:", "arn:"+strings.Repeat("x", 1<<20), 1)
	deep := `{"user":"` + seed.User + `","topic":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`
	for _, tc := range []struct {
		name        string
		event       []byte
		field, says string
	}{
		{"unknown field", lambdatest.Event(t, "testdata/unknown-field.json", vars), "topc", "not a field"},
		{"unknown user", lambdatest.Event(t, "testdata/unknown-user.json", vars), "user", "no user named"},
		{"invalid value", lambdatest.Event(t, "testdata/invalid-value.json", vars), "max_steps", "between 1 and 40"},
		{"empty", lambdatest.Event(t, "testdata/empty.json", vars), "", "the event is empty"},
		{"truncated", lambdatest.Event(t, "testdata/truncated.json", vars), "", "truncated"},
		{"nested too deep", []byte(deep), "", "levels deep"},
		{"schedule of a megabyte", []byte(huge), "schedule", "at most 2048 characters"},
	} {
		before := refusals(fn.Logs())
		inv := fn.Invoke(t, tc.event)
		var res schedule.Result
		if err := json.Unmarshal(inv.Body, &res); err != nil || inv.FunctionError != "" ||
			res.Invalid == nil || res.Invalid.Field != tc.field || !strings.Contains(res.Invalid.Message, tc.says) || res.RunID != 0 {
			t.Fatalf("%s: want it acknowledged as invalid on %q saying %q, got %q %.300s", tc.name, tc.field, tc.says, inv.FunctionError, inv.Body)
		}
		waitFor(t, fn, func(logs string) bool { return refusals(logs) == before+1 })
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM gb_agent_research_runs").Scan(&runs); err != nil || runs != 1 {
		t.Fatalf("%d runs after the invalid events (%v), want 1", runs, err)
	}
	if strings.Contains(fn.Logs(), `"level":"ERROR"`) {
		t.Fatalf("a refused event was logged as an error:\n%s", fn.Logs())
	}
}

// refusals counts the warnings of refused events in the logs.
func refusals(logs string) (n int) {
	for line := range strings.Lines(logs) {
		if strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, "scheduled research refused") {
			n++
		}
	}
	return n
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
