package schedule_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/gbresearch/gb/infra/openai"
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
		{"wrong type", `{"user":"a","topic":"x","max_steps":"eight","schedule":"s","scheduled_time":"2026-11-30T06:00:00Z"}`, "max_steps", "must be a JSON integer, not string"},
		{"fraction for an integer", strings.Replace(good, `"topic"`, `"max_steps":5.5,"topic"`, 1), "max_steps", "must be a JSON integer, not number 5.5"},
		{"object for a string", strings.Replace(good, `"What does sync.Once do?"`, `{"q":"x"}`, 1), "topic", "must be a JSON string, not object"},
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
		{"empty", "", "", "the event is empty"},
		{"blank", " \n\t", "", "the event is empty"},
		{"null", "null", "", "not a JSON object but JSON null"},
		{"truncated", good[:len(good)/2], "", "truncated"},
		{"not JSON", "user=alice", "", "not valid JSON"},
		{"nested too deep", `{"topic":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, "", "more than 16 levels deep"},
		{"nested too deep, unclosed", strings.Repeat(`{"a":`, 100000), "", "more than 16 levels deep"},
		{"no user can have the name", strings.Replace(good, `"alice"`, `"alice smith"`, 1), "user", "cannot be a user's name"},
		{"user name too long", strings.Replace(good, `"alice"`, `"`+strings.Repeat("a", 65)+`"`, 1), "user", "1 to 64"},
		{"schedule too long", strings.Replace(good, `"arn:s"`, `"arn:`+strings.Repeat("s", schedule.MaxScheduleLen-3)+`"`, 1), "schedule",
			"is 2049 bytes long; it may have at most 2048 characters"},
		{"schedule of a megabyte", strings.Replace(good, `"arn:s"`, `"`+strings.Repeat("s", 1<<20)+`"`, 1), "schedule", "at most 2048"},
		{"space in schedule", strings.Replace(good, `"arn:s"`, `"arn:s "`, 1), "schedule", "printable ASCII"},
		{"control character in schedule", strings.Replace(good, `"arn:s"`, `"arn:\ts"`, 1), "schedule", "printable ASCII"},
		{"NUL in schedule", strings.Replace(good, `"arn:s"`, `"arn:\u0000s"`, 1), "schedule", "printable ASCII"},
		{"time without offset", strings.Replace(good, "06:00:00Z", "06:00:00", 1), "scheduled_time", "RFC 3339"},
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

// TestDecodeKeepsTheLimits: a schedule of MaxScheduleLen characters and
// brackets nested inside a string (not JSON nesting) are accepted.
func TestDecodeKeepsTheLimits(t *testing.T) {
	t.Parallel()
	arn := "arn:" + strings.Repeat("s", schedule.MaxScheduleLen-4)
	in, err := schedule.Decode([]byte(strings.Replace(good, `"arn:s"`, `"`+arn+`"`, 1)))
	if err != nil || in.Schedule != arn {
		t.Fatalf("a schedule of %d characters: %v", len(arn), err)
	}
	topic := strings.Repeat("[{", 500)
	if in, err := schedule.Decode([]byte(strings.Replace(good, "What does sync.Once do?", topic, 1))); err != nil || in.Topic != topic {
		t.Fatalf("brackets in a string: %v", err)
	}
}

// TestDecodeNormalizesTheScheduledTime: every spelling of one instant makes
// one key; another instant makes another.
func TestDecodeNormalizesTheScheduledTime(t *testing.T) {
	t.Parallel()
	for spelling, want := range map[string]string{
		"2026-12-02T03:00:00Z":             "2026-12-02T03:00:00Z",
		"2026-12-02T03:00:00+00:00":        "2026-12-02T03:00:00Z",
		"2026-12-02T03:00:00.000Z":         "2026-12-02T03:00:00Z",
		"2026-12-02T03:00:00.000000000Z":   "2026-12-02T03:00:00Z",
		"2026-12-02T04:00:00+01:00":        "2026-12-02T03:00:00Z",
		"2026-12-01T22:30:00.0-04:30":      "2026-12-02T03:00:00Z",
		"2026-12-02T03:00:00.500+00:00":    "2026-12-02T03:00:00.5Z",
		"2026-12-02T03:00:01Z":             "2026-12-02T03:00:01Z",
		"2026-12-02T03:00:00.000000001Z":   "2026-12-02T03:00:00.000000001Z",
		"2026-12-02T05:00:00.000000+02:00": "2026-12-02T03:00:00Z",
	} {
		in, err := schedule.Decode([]byte(strings.Replace(good, "2026-11-30T06:00:00Z", spelling, 1)))
		if err != nil {
			t.Fatalf("%s: %v", spelling, err)
		}
		if in.ScheduledTime != want || in.Key() != "alice/arn:s@"+want {
			t.Errorf("%s: time %q, key %q; want the time %s", spelling, in.ScheduledTime, in.Key(), want)
		}
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
	h := &schedule.Handler{Service: agent, Logger: slog.New(slog.NewTextHandler(&logs, nil))}

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
		if n := strings.Count(logs.String(), "level=WARN"); n != 1 || strings.Contains(logs.String(), "level=ERROR") ||
			!strings.Contains(logs.String(), "field="+tc.field) {
			t.Fatalf("want one warning naming the field %s: %s", tc.field, logs.String())
		}
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM gb_agent_research_runs").Scan(&runs); err != nil || runs != 2 {
		t.Fatalf("%d runs after the invalid events (%v), want the 2 valid ones", runs, err)
	}
}

// newHandler is a Handler on a fresh seeded database, logging as text to
// logs.
func newHandler(t *testing.T, logs *bytes.Buffer) (*schedule.Handler, *pgxpool.Pool) {
	t.Helper()
	pool := dbtest.NewPool(t)
	lambdatest.Seed(t, pool)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	return &schedule.Handler{Service: agent, Logger: slog.New(slog.NewTextHandler(logs, nil))}, pool
}

// TestHandleStartsOneResearchPerInstant: deliveries of one scheduled time
// written in other ways (an offset instead of Z, fractional zeros, another
// time zone) return the run the first one started.
func TestHandleStartsOneResearchPerInstant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs bytes.Buffer
	h, pool := newHandler(t, &logs)
	at := func(instant string) string { return strings.Replace(good, "2026-11-30T06:00:00Z", instant, 1) }
	first, err := h.Handle(ctx, []byte(at("2026-12-02T03:00:00+00:00")))
	if err != nil || !first.Created {
		t.Fatalf("first delivery: %+v, %v", first, err)
	}
	for _, instant := range []string{"2026-12-02T03:00:00Z", "2026-12-02T03:00:00.000Z", "2026-12-02T04:00:00.00+01:00"} {
		res, err := h.Handle(ctx, []byte(at(instant)))
		if err != nil || res.Created || res.RunID != first.RunID {
			t.Errorf("%s: %+v, %v; want run %d, not created", instant, res, err, first.RunID)
		}
	}
	var runs int
	var key string
	if err := pool.QueryRow(ctx, "SELECT count(*), max(schedule_key) FROM gb_agent_research_runs").Scan(&runs, &key); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || key != "alice/arn:s@2026-12-02T03:00:00Z" {
		t.Fatalf("%d runs, key %q; want one with the instant in UTC", runs, key)
	}
}

// TestHandleKeepsKeysWithinWhatPostgresHolds: the longest schedule allowed
// with the longest user name makes a key Postgres indexes; a schedule of a
// megabyte, which Postgres would refuse at every attempt (index row size),
// is acknowledged as invalid instead of failing the invocation.
func TestHandleKeepsKeysWithinWhatPostgresHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs bytes.Buffer
	h, pool := newHandler(t, &logs)
	user := strings.Repeat("u", 64)
	if _, err := jobs.CreateKey(ctx, pool, user); err != nil {
		t.Fatal(err)
	}
	// Random characters, which Postgres cannot compress below its limit.
	var arn strings.Builder
	arn.WriteString("arn:")
	for i := 0; arn.Len() < schedule.MaxScheduleLen; i++ {
		arn.WriteByte(byte(0x21 + (i*7919+i*i*31)%94))
	}
	arnJSON, err := json.Marshal(arn.String())
	if err != nil {
		t.Fatal(err)
	}
	longest := strings.Replace(strings.Replace(good, `"alice"`, `"`+user+`"`, 1), `"arn:s"`, string(arnJSON), 1)
	res, err := h.Handle(ctx, []byte(longest))
	if err != nil || !res.Created {
		t.Fatalf("the longest key: %+v, %v", res, err)
	}
	huge := strings.Replace(good, `"arn:s"`, `"arn:`+strings.Repeat("x", 1<<20)+`"`, 1)
	res, err = h.Handle(ctx, []byte(huge))
	if err != nil || res.Invalid == nil || res.Invalid.Field != "schedule" || !strings.Contains(res.Invalid.Message, "at most 2048 characters") {
		t.Fatalf("a schedule of a megabyte: %+v, %v; want it acknowledged as invalid", res, err)
	}
}

// TestInvokeTakesAnyPayload: Invoke answers every payload with a Result in
// JSON, an empty or truncated one included, and fails only when a retry
// may help.
func TestInvokeTakesAnyPayload(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h, _ := newHandler(t, &logs)
	for payload, want := range map[string]string{
		"":                "the event is empty",
		good[:20]:         "truncated",
		"\x00\x01":        "not valid JSON",
		`{"user":"alice"`: "truncated",
	} {
		b, err := h.Invoke(context.Background(), []byte(payload))
		var res schedule.Result
		if err != nil || json.Unmarshal(b, &res) != nil || res.Invalid == nil || !strings.Contains(res.Invalid.Message, want) {
			t.Errorf("%q: answered %s, %v; want it refused as %q", payload, b, err, want)
		}
	}
	b, err := h.Invoke(context.Background(), []byte(good))
	var res schedule.Result
	if err != nil || json.Unmarshal(b, &res) != nil || !res.Created || res.RunID == 0 {
		t.Fatalf("a valid event: %s, %v", b, err)
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
	h := &schedule.Handler{Service: agent, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	res, err := h.Handle(context.Background(), []byte(good))
	var ie *schedule.InputError
	if err == nil || errors.As(err, &ie) || res.Invalid != nil {
		t.Fatalf("got %+v, %v; want a failed invocation worth a retry", res, err)
	}
	if !strings.Contains(logs.String(), "Lambda retries it") {
		t.Fatalf("the log should say the event is retried: %s", logs.String())
	}
}

// A schedule's dollar budget on a model gb has no price for is refused,
// acknowledged and not retried, naming the field and GB_MODEL_PROFILES.
func TestScheduledDollarBudgetOnAnUnpricedModelIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	lambdatest.Seed(t, pool)
	model, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:9/v1", APIKey: "sk-x", Model: "my-model"})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	h := &schedule.Handler{Service: agent, Logger: slog.New(slog.DiscardHandler)}
	in := strings.Replace(good, `"topic"`, `"max_cost_usd":0.002,"topic"`, 1)
	res, err := h.Handle(ctx, []byte(in))
	if err != nil || res.Invalid == nil || res.Invalid.Field != "max_cost_usd" ||
		!strings.Contains(res.Invalid.Message, "GB_MODEL_PROFILES") || !strings.Contains(res.Invalid.Message, "my-model") {
		t.Fatalf("%+v, %v; want it refused on max_cost_usd naming my-model and GB_MODEL_PROFILES", res, err)
	}
}
