package schedule_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/functions/scheduler/schedule"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
)

const good = `{"user":"alice","topic":"What does sync.Once do?","schedule":"arn:s","scheduled_time":"2026-11-30T06:00:00Z"}`

func TestDecode(t *testing.T) {
	t.Parallel()
	in, err := schedule.Decode([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if in.Key() != "alice/arn:s@2026-11-30T06:00:00Z" || in.User != "alice" || in.MaxSteps != nil {
		t.Fatalf("decoded %+v key %q", in, in.Key())
	}
	if in, err := schedule.Decode([]byte(strings.Replace(good, `"topic"`, `"max_steps":5,"topic"`, 1))); err != nil || in.MaxSteps == nil || *in.MaxSteps != 5 {
		t.Fatalf("max_steps 5: %+v, %v", in, err)
	}
	for _, tc := range []struct{ name, event, field, says string }{
		{"unknown field", `{"user":"a","topc":"x","schedule":"s","scheduled_time":"2026-11-30T06:00:00Z"}`, "topc", "allowed: user, topic"},
		{"wrong type", `{"user":"a","topic":"x","max_steps":"eight","schedule":"s","scheduled_time":"2026-11-30T06:00:00Z"}`, "max_steps", "must be a JSON number"},
		{"no user", `{"topic":"x","schedule":"s","scheduled_time":"2026-11-30T06:00:00Z"}`, "user", "required"},
		{"no schedule", `{"user":"a","topic":"x","scheduled_time":"2026-11-30T06:00:00Z"}`, "schedule", "required"},
		{"no time", `{"user":"a","topic":"x","schedule":"s"}`, "scheduled_time", "required"},
		{"placeholder left", `{"user":"a","topic":"x","schedule":"s","scheduled_time":"<aws.scheduler.scheduled-time>"}`, "scheduled_time", "RFC 3339"},
		{"not an object", `["user"]`, "", "not a JSON object"},
		{"trailing data", good + `{}`, "", "after its JSON object"},
		{"explicit zero max_steps", strings.Replace(good, `"topic"`, `"max_steps":0,"topic"`, 1), "max_steps", "leave it out for the default"},
		{"upper-case key", strings.Replace(good, `"topic"`, `"TOPIC"`, 1), "TOPIC", "case-sensitive"},
		{"invalid UTF-8", strings.Replace(good, "sync.Once", "sync.\xffOnce", 1), "", "UTF-8"},
		{"NUL in user", strings.Replace(good, `"alice"`, `"al\u0000ice"`, 1), "user", "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schedule.Decode([]byte(tc.event))
			var ie *schedule.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || !strings.Contains(ie.Error(), tc.says) {
				t.Fatalf("got %v (field %q), want field %q saying %q", err, fieldOf(ie), tc.field, tc.says)
			}
		})
	}
}

func fieldOf(ie *schedule.InputError) string {
	if ie == nil {
		return "<none>"
	}
	return ie.Field
}

func TestHandleIsIdempotentPerScheduledTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	seed := lambdatest.Seed(t, pool)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h := &schedule.Handler{Agent: agent, Logger: slog.New(slog.NewTextHandler(&logs, nil))}

	first, err := h.Handle(ctx, []byte(good))
	if err != nil || !first.Created || first.RunID == 0 {
		t.Fatalf("first delivery: %+v, %v", first, err)
	}
	again, err := h.Handle(ctx, []byte(good))
	if err != nil || again.Created || again.RunID != first.RunID {
		t.Fatalf("second delivery: %+v, %v; want run %d, not created", again, err, first.RunID)
	}
	run, err := jobs.GetRun(ctx, pool, first.RunID)
	if err != nil || run.UserID != seed.UserID {
		t.Fatalf("run %+v, %v: want owned by %s", run, err, seed.User)
	}
	var runs, stepJobs int
	if err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM gb_agent_research_runs), (SELECT count(*) FROM river_job)").
		Scan(&runs, &stepJobs); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || stepJobs != 1 {
		t.Fatalf("%d runs and %d jobs after a repeated delivery, want 1 and 1", runs, stepJobs)
	}
	// The next scheduled time is another research.
	next, err := h.Handle(ctx, []byte(strings.Replace(good, "06:00:00Z", "07:00:00Z", 1)))
	if err != nil || !next.Created || next.RunID == first.RunID {
		t.Fatalf("next time: %+v, %v", next, err)
	}

	for _, tc := range []struct{ event, field string }{
		{strings.Replace(good, `"alice"`, `"nobody"`, 1), "user"},
		{strings.Replace(good, `"What does sync.Once do?"`, `"  "`, 1), "topic"},
		{strings.Replace(strings.Replace(good, `"topic"`, `"dataset":"nope","topic"`, 1), "06:00", "08:00", 1), "dataset"},
	} {
		logs.Reset()
		res, err := h.Handle(ctx, []byte(tc.event))
		// Acknowledged (no error, so no retry), with the field at fault.
		if err != nil || res.Invalid == nil || res.Invalid.Field != tc.field || res.RunID != 0 {
			t.Fatalf("%s: got %+v, %v; want it acknowledged as invalid on %s", tc.event, res, err, tc.field)
		}
		if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), "field="+tc.field) {
			t.Fatalf("want one error line naming the field %s: %s", tc.field, logs.String())
		}
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM gb_agent_research_runs").Scan(&runs); err != nil || runs != 2 {
		t.Fatalf("%d runs after the invalid events (%v), want the 2 valid ones", runs, err)
	}
}

// TestHandleFailsWhenTheDatabaseIsDown: with the database unreachable, a
// valid event fails the invocation (so that Lambda retries it) instead of
// being acknowledged as invalid.
func TestHandleFailsWhenTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there any more
	pool, err := pgxpool.New(context.Background(), "postgres://gb@"+addr+"/gb?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h := &schedule.Handler{Agent: agent, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	res, err := h.Handle(context.Background(), []byte(good))
	var ie *schedule.InputError
	if err == nil || errors.As(err, &ie) || res.Invalid != nil {
		t.Fatalf("got %+v, %v; want a failed invocation worth a retry", res, err)
	}
	if !strings.Contains(logs.String(), "Lambda retries it") {
		t.Fatalf("the log should say the event is retried: %s", logs.String())
	}
}
