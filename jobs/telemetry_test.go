package jobs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
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

// TestTreeTraceShowsCommitsAndNests works a research with sub-agents in a
// traced agent and checks its one trace: every step's transaction shows
// as a span inside the step's span (the step's context reaches pgx).
func TestTreeTraceShowsCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(tracectx.IDGenerator{}))
	b := setupOn(t, pool, setupOpts{noWork: true})
	a, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}, Work: true, Tracer: tp})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = a.Stop(sctx)
	})
	sctx, req := tp.Tracer("test").Start(ctx, "request")
	run, _, err := a.StartResearch(sctx, jobs.StartParams{UserID: b.userID,
		Topic: "How do goroutines and channels synchronize work, and how does the context package carry " +
		"cancellation, and how does net/http serve requests?"})
	req.End()
	if err != nil {
		t.Fatal(err)
	}
	if r := waitEnded(t, pool, run.ID, 60*time.Second); r.Status != jobs.StatusSucceeded {
		t.Fatalf("run ended %s: %s", r.Status, r.Error)
	}
	tree, err := jobs.Tree(ctx, pool, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The last run span is recorded as the root's end commits.
	waitFor(t, 10*time.Second, "the root's span", func() bool {
		for _, s := range exp.GetSpans() {
			if strings.HasPrefix(s.Name, "invoke_agent") && s.Parent.SpanID() == req.SpanContext().SpanID() {
				return true
			}
		}
		return false
	})
	byID := map[trace.SpanID]tracetest.SpanStub{}
	var spans []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() == req.SpanContext().TraceID() {
			byID[s.SpanContext.SpanID()] = s
			spans = append(spans, s)
		}
	}
	committed := map[trace.SpanID]bool{} // step spans holding their transaction's span
	steps := 0
	for _, s := range spans {
		if s.Name == "step" {
			steps++
		}
		p, ok := byID[s.Parent.SpanID()]
		if !ok {
			continue // the request's span is the only root
		}
		// A step commits in a transaction (COMMIT) or, when its tools all
		// ran before, in one batch (an implicit transaction).
		if p.Name == "step" && (s.Name == "COMMIT" || s.Name == "batch") {
			committed[p.SpanContext.SpanID()] = true
		}
	}
	total := 0
	for _, r := range tree {
		total += r.Steps
	}
	if len(tree) < 3 || steps < total || len(committed) < total {
		t.Errorf("%d runs, %d steps committed, %d step spans, %d holding their commit", len(tree), total, steps, len(committed))
	}
	t.Logf("%d spans, %d runs, %d steps, %d holding their commit", len(spans), len(tree), steps, len(committed))
}
