package main

import (
	"context"
	"encoding/json"
	"testing"

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

	for fixture, field := range map[string]string{"unknown-field.json": "topc", "unknown-user.json": "user"} {
		inv := fn.Invoke(t, lambdatest.Event(t, "testdata/"+fixture, map[string]string{"USER": seed.User}))
		var lambdaErr struct {
			Message string `json:"errorMessage"`
			Type    string `json:"errorType"`
		}
		_ = json.Unmarshal(inv.Body, &lambdaErr)
		if inv.FunctionError == "" || lambdaErr.Type != "InputError" || lambdaErr.Message[:len(field)+1] != field+":" {
			t.Fatalf("%s: want an InputError on %s, got %q %s", fixture, field, inv.FunctionError, inv.Body)
		}
	}
}
