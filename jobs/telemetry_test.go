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
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/tracectx"
)

// TestTraceContextOnlyWhenTracing: an agent with no tracer provider writes
// no trace context (the run's traceparent stays NULL, its step job has no
// traceparent in its metadata); one with a provider gives the run a span
// identity in the trace of the span that created it, and its first step
// job the traceparent of the span that enqueued it, in that trace.
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
	// The job was enqueued in River's insert span, under the request's.
	if tp, _ := meta["traceparent"].(string); tracectx.Parse(tp).TraceID() != span.SpanContext().TraceID() {
		t.Errorf("step job metadata %v; want the traceparent of the span that enqueued it", meta)
	}
}

// TestTreeTraceShowsCommitsAndNests works a research with sub-agents in a
// traced agent and checks its one trace: every step's transaction shows
// as a span inside the step's span (the step's context reaches pgx);
// every span lies within its parent's time; every job is worked in
// River's span, under its run's; a sub-agent's run span is under its
// parent's, linked to its spawn call; chat spans follow the GenAI
// conventions.
func TestTreeTraceShowsCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(tracectx.IDGenerator{}))
	b := setupOn(t, pool, setupOpts{noWork: true})
	a, err := jobs.New(jobs.Deps{Pool: pool, Model: &servedOffline{}, Work: true, Tracer: tp})
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
			if strings.HasPrefix(s.Name, "invoke_agent") && !s.Parent.IsValid() && len(s.Links) == 1 &&
				s.Links[0].SpanContext.SpanID() == req.SpanContext().SpanID() {
				return true // the root's: the root of the trace, linked to the request
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
	steps, chats, byParent := 0, 0, map[string]int{}
	for _, s := range spans {
		if s.Name == "step" {
			steps++
		}
		p, ok := byID[s.Parent.SpanID()]
		if !ok {
			continue // the request's span and the root run's are the roots
		}
		// A step commits in a transaction (COMMIT) or, when its tools all
		// ran before, in one batch (an implicit transaction).
		if p.Name == "step" && (s.Name == "COMMIT" || s.Name == "batch") {
			committed[p.SpanContext.SpanID()] = true
		}
		if s.StartTime.Before(p.StartTime) || s.EndTime.After(p.EndTime) {
			t.Errorf("span %q [%s, %s] is not within its parent %q [%s, %s]", s.Name, s.StartTime.Format(time.StampMicro),
				s.EndTime.Format(time.StampMicro), p.Name, p.StartTime.Format(time.StampMicro), p.EndTime.Format(time.StampMicro))
		}
		// Every job is worked in River's span, a child of its run's.
		if strings.HasPrefix(s.Name, "river.work/") && (!strings.HasPrefix(p.Name, "invoke_agent ") ||
			len(s.Links) != 1 || s.Links[0].SpanContext.TraceID() != req.SpanContext().TraceID()) {
			t.Errorf("job span %q hangs from %q, links %v", s.Name, p.Name, s.Links)
		}
		if s.Name == "step" {
			byParent[p.Name]++
		}
		// A model call: the conventions' "chat {model}", with the model's
		// short id, the answer's id and the server called.
		if strings.HasPrefix(s.Name, "chat") {
			chats++
			a := map[string]string{}
			for _, kv := range s.Attributes {
				a[string(kv.Key)] = kv.Value.String()
			}
			if s.Name != "chat offline" || a["gen_ai.request.model"] != "offline" || a["gen_ai.response.model"] != "offline" ||
				a["gen_ai.response.id"] != "answer-"+a["gb.call.id"] || a["server.address"] != "models.example" ||
				a["server.port"] != "8443" || a["gen_ai.provider.name"] != "gb" {
				t.Errorf("chat span %q: %v", s.Name, a)
			}
		}
		// A sub-agent's run hangs from its parent's, linked to the call
		// that spawned it.
		if strings.HasPrefix(s.Name, "invoke_agent ") {
			spawn, ok := byID[linkOf(s)]
			if !strings.HasPrefix(p.Name, "invoke_agent ") || !ok || spawn.Name != "execute_tool spawn_subagent" {
				t.Errorf("run span %q hangs from %q, linked to %q", s.Name, p.Name, spawn.Name)
			}
		}
	}
	if len(byParent) != 1 || byParent["river.work/"+jobs.StepKind] == 0 {
		t.Errorf("steps by parent %v; want each in its job's River span", byParent)
	}
	total := 0
	for _, r := range tree {
		total += r.Steps
	}
	if len(tree) < 3 || steps < total || len(committed) < total || chats < total {
		t.Errorf("%d runs, %d steps committed, %d step spans, %d holding their commit, %d chat spans", len(tree), total, steps,
			len(committed), chats)
	}
	t.Logf("%d spans, %d runs, %d steps, %d holding their commit", len(spans), len(tree), steps, len(committed))
}

// servedOffline is the offline policy as if a server answered it: with
// an answer id and a server's address.
type servedOffline struct{ offline.Model }

func (m *servedOffline) ServerAddress() (string, int) { return "models.example", 8443 }

func (m *servedOffline) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := m.Model.Complete(ctx, req)
	resp.ID = "answer-" + req.ID
	return resp, err
}

// linkOf is the span a span links to (none when it has no link).
func linkOf(s tracetest.SpanStub) trace.SpanID {
	if len(s.Links) == 0 {
		return trace.SpanID{}
	}
	return s.Links[0].SpanContext.SpanID()
}
