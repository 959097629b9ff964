package tracectx_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gbresearch/gb/jobs/tracectx"
)

// TestRunSpanTakesItsChosenIdentity: a run's identity is chosen in its
// parent's trace and stored as a traceparent; a span started later, in
// another provider, with WithIDs gets exactly that identity and hangs from
// the parent; spans started without it get fresh ids.
func TestRunSpanTakesItsChosenIdentity(t *testing.T) {
	t.Parallel()
	parent := tracectx.Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if !parent.IsValid() || !parent.IsRemote() {
		t.Fatalf("parsed %+v", parent)
	}
	self, parentID := tracectx.Run(parent)
	if self.TraceID() != parent.TraceID() || parentID != parent.SpanID() || self.SpanID() == parent.SpanID() || !self.IsSampled() {
		t.Fatalf("run identity %s (parent %s) from %s", self.SpanID(), parentID, parent.SpanID())
	}
	stored := tracectx.Format(self)
	if got := tracectx.Parse(stored); got.TraceID() != self.TraceID() || got.SpanID() != self.SpanID() {
		t.Fatalf("%q read back as %+v", stored, got)
	}

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(tracectx.IDGenerator{}))
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), self.WithSpanID(parentID))
	_, run := tp.Tracer("t").Start(tracectx.WithIDs(ctx, self.TraceID(), self.SpanID()), "invoke_agent")
	run.End()
	_, other := tp.Tracer("t").Start(ctx, "other")
	other.End()
	_, root := tp.Tracer("t").Start(tracectx.WithIDs(context.Background(), self.TraceID(), self.SpanID()), "root")
	root.End()
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	if s := spans[0]; s.SpanContext.SpanID() != self.SpanID() || s.SpanContext.TraceID() != self.TraceID() || s.Parent.SpanID() != parentID {
		t.Errorf("run span %s in %s under %s; want %s in %s under %s", s.SpanContext.SpanID(), s.SpanContext.TraceID(),
			s.Parent.SpanID(), self.SpanID(), self.TraceID(), parentID)
	}
	if s := spans[1]; s.SpanContext.SpanID() == self.SpanID() || s.SpanContext.TraceID() != self.TraceID() {
		t.Errorf("a span started without WithIDs took %s", s.SpanContext.SpanID())
	}
	if s := spans[2]; s.SpanContext.SpanID() != self.SpanID() || s.SpanContext.TraceID() != self.TraceID() || s.Parent.IsValid() {
		t.Errorf("a root run span got %s in %s", s.SpanContext.SpanID(), s.SpanContext.TraceID())
	}
}

// TestRunWithoutParentStartsATrace: with no parent a run starts a sampled
// trace of its own; what is not a traceparent parses as invalid.
func TestRunWithoutParentStartsATrace(t *testing.T) {
	t.Parallel()
	self, parentID := tracectx.Run(trace.SpanContext{})
	if !self.IsValid() || parentID.IsValid() || !self.IsSampled() {
		t.Fatalf("%+v, parent %s", self, parentID)
	}
	for _, s := range []string{"", "00-zz-00f067aa0ba902b7-01", "not a traceparent"} {
		if tracectx.Parse(s).IsValid() {
			t.Errorf("%q parsed as valid", s)
		}
	}
	if tracectx.Format(trace.SpanContext{}) != "" {
		t.Error("an invalid span context formats as a traceparent")
	}
}
