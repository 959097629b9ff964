package jobs_test

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/tracectx"
)

// TestTraceContextOnlyWhenTracing: an agent with no tracer provider writes
// no trace context (the run's traceparent stays NULL, its step job has no
// traceparent in its metadata); one with a provider gives the run a span
// identity in the trace of the span that created it, and its first step
// job the traceparent of that span.
func TestTraceContextOnlyWhenTracing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	benchDocs(t, pool)
	users := benchUsers(t, pool, 1)
	read := func(id int64) (traceparent, parentID *string, meta map[string]any) {
		t.Helper()
		var raw []byte
		if err := pool.QueryRow(ctx, `SELECT r.traceparent, r.trace_parent_id, j.metadata FROM gb_agent_research_runs r
			JOIN river_job j ON j.kind = $2 AND (j.args->>'run_id')::bigint = r.id WHERE r.id = $1`, id, jobs.StepKind).
			Scan(&traceparent, &parentID, &raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		return traceparent, parentID, meta
	}

	off, err := jobs.New(jobs.Deps{Pool: pool, Model: searchingModel()})
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := off.StartResearch(ctx, jobs.StartParams{UserID: users[0], Topic: "untraced"})
	if err != nil {
		t.Fatal(err)
	}
	if tp, pid, meta := read(run.ID); tp != nil || pid != nil || meta["traceparent"] != nil {
		t.Fatalf("untraced run: traceparent %v, parent %v, job metadata %v", tp, pid, meta)
	}

	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()),
		sdktrace.WithIDGenerator(tracectx.IDGenerator{}))
	on, err := jobs.New(jobs.Deps{Pool: pool, Model: searchingModel(), Tracer: tp})
	if err != nil {
		t.Fatal(err)
	}
	sctx, span := tp.Tracer("test").Start(ctx, "request")
	run, _, err = on.StartResearch(sctx, jobs.StartParams{UserID: users[0], Topic: "traced"})
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	traceparent, parentID, meta := read(run.ID)
	if traceparent == nil || parentID == nil {
		t.Fatalf("traced run has no trace context: %v, %v", traceparent, parentID)
	}
	self := tracectx.Parse(*traceparent)
	if self.TraceID() != span.SpanContext().TraceID() || *parentID != span.SpanContext().SpanID().String() ||
		self.SpanID() == span.SpanContext().SpanID() {
		t.Errorf("run %s under %s; want a span of its own in trace %s under %s", *traceparent, *parentID,
			span.SpanContext().TraceID(), span.SpanContext().SpanID())
	}
	if meta["traceparent"] != tracectx.Format(span.SpanContext()) {
		t.Errorf("step job metadata %v; want the traceparent of the span that enqueued it", meta)
	}
}
