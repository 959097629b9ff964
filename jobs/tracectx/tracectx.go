// Package tracectx carries the trace context of a research across the
// processes that work it. A run's span (invoke_agent) is begun by the
// process that creates the run and ended by whichever process ends it, so
// its identity is chosen up front, stored on the run row as a W3C
// traceparent, and given back to the tracer when the span is finally
// recorded: IDGenerator hands out the identity a context asks for
// (WithIDs), and random ones otherwise.
//
// It is a leaf package: it imports nothing of the project.
package tracectx

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// wanted is the identity a context asks IDGenerator for.
type wanted struct {
	trace trace.TraceID
	span  trace.SpanID
}

type wantedKey struct{}

// WithIDs asks the IDGenerator of a tracer provider to give the next span
// started with ctx the trace and span ids given: the span of a run whose
// identity was chosen when the run was created. Only that span should be
// started with ctx.
func WithIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, wantedKey{}, wanted{trace: tid, span: sid})
}

// IDGenerator is an sdktrace.IDGenerator that gives a span the ids its
// context asks for (WithIDs) and random ones otherwise.
type IDGenerator struct{}

// NewIDs returns the trace and span id of a root span.
func (IDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if w, ok := ctx.Value(wantedKey{}).(wanted); ok && w.trace.IsValid() && w.span.IsValid() {
		return w.trace, w.span
	}
	return NewTraceID(), NewSpanID()
}

// NewSpanID returns the span id of a span in the trace tid.
func (IDGenerator) NewSpanID(ctx context.Context, tid trace.TraceID) trace.SpanID {
	if w, ok := ctx.Value(wantedKey{}).(wanted); ok && w.trace == tid && w.span.IsValid() {
		return w.span
	}
	return NewSpanID()
}

// NewTraceID is a random, valid trace id.
func NewTraceID() trace.TraceID {
	var id trace.TraceID
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:8], rand.Uint64())
		binary.BigEndian.PutUint64(id[8:], rand.Uint64())
	}
	return id
}

// NewSpanID is a random, valid span id.
func NewSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}

// Format is the W3C traceparent of sc ("" when sc is not valid).
func Format(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c.Get("traceparent")
}

// Parse reads a W3C traceparent as a remote span context; the span context
// is not valid when s is not a traceparent.
func Parse(s string) trace.SpanContext {
	if s == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	return trace.SpanContextFromContext(ctx)
}

// Run is the trace identity of a new run: the span context of its span,
// in the trace of parent (a new trace when parent is not valid), and the
// id of the span it hangs from (invalid for none). It keeps the parent's
// sampling decision; a new trace is sampled.
func Run(parent trace.SpanContext) (self trace.SpanContext, parentSpan trace.SpanID) {
	tid, flags := parent.TraceID(), parent.TraceFlags()
	if !parent.IsValid() {
		tid, flags = NewTraceID(), trace.FlagsSampled
	}
	self = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: NewSpanID(),
		TraceFlags: flags, Remote: true})
	return self, parent.SpanID()
}
