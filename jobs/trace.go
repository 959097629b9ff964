package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/gbresearch/gb/jobs/tracectx"
)

// This file carries a tree's trace across the processes and jobs that
// work it, so that a whole tree is one trace:
//
//   - a run created by a tracing process gets a span identity of its own
//     (tracectx.Run) in the trace of the span that created it (the API
//     request, or the spawn_subagent call of its parent), stored on its
//     row (traceRun);
//   - each step job records the span context that enqueued it in its
//     metadata (jobMetadata), and its span (startJob) is a child of its
//     run's span, linked to that context;
//   - the run's own span (invoke_agent) is recorded when the run ends, by
//     whichever process ends it, from its creation to its end (endRunSpans).

// metaTraceparent is the key of the job metadata that holds the traceparent
// of the span that inserted the job.
const metaTraceparent = "traceparent"

// traceRun gives a new run its trace identity, in the creating
// transaction, when tracing is on: the child of the span in ctx.
func (a *Agent) traceRun(ctx context.Context, tx pgx.Tx, run *Run) error {
	if !a.tel.tracing() {
		return nil
	}
	self, parentID := a.runTrace(ctx)
	if _, err := tx.Exec(ctx, `UPDATE gb_agent_research_runs SET traceparent = $2, trace_parent_id = $3 WHERE id = $1`,
		run.ID, self, parentID); err != nil {
		return fmt.Errorf("error recording the trace context of run %d: %w", run.ID, err)
	}
	return nil
}

// runTrace is the trace context a run started in ctx records: its own
// traceparent and the span it hangs from; empty when tracing is off.
func (a *Agent) runTrace(ctx context.Context) (traceparent, parentID string) {
	if !a.tel.tracing() {
		return "", ""
	}
	self, parent := tracectx.Run(trace.SpanContextFromContext(ctx))
	if parent.IsValid() {
		parentID = parent.String()
	}
	return tracectx.Format(self), parentID
}

// jobMetadata is the metadata of a job inserted with ctx: the traceparent
// of the span in ctx, when tracing is on and there is one; nil otherwise.
func (a *Agent) jobMetadata(ctx context.Context) []byte {
	if !a.tel.tracing() {
		return nil
	}
	tp := tracectx.Format(trace.SpanContextFromContext(ctx))
	if tp == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]string{metaTraceparent: tp})
	return b
}

// startJob records how long the step job waited in the queue and, when
// tracing is on, begins its span: a child of its run's span, linked to the
// span that enqueued it, with the job's id, attempt, kind and queue.
func (a *Agent) startJob(ctx context.Context, job *river.Job[StepArgs]) (context.Context, func(err error)) {
	if job.AttemptedAt != nil && a.tel.metered {
		ready := job.ScheduledAt
		if job.CreatedAt.After(ready) {
			ready = job.CreatedAt // a step job is queued at its tree's start (treeOrder)
		}
		a.tel.queueWait.Record(ctx, max(job.AttemptedAt.Sub(ready), 0).Seconds(),
			metric.WithAttributes(attribute.String(attrQueue, job.Queue), attribute.Int(attrJobAttempt, job.Attempt)))
	}
	if !a.tel.tracing() {
		return ctx, func(error) {}
	}
	var traceparent *string
	if err := a.pool.QueryRow(ctx, `SELECT traceparent FROM gb_agent_research_runs WHERE id = $1`, job.Args.RunID).
		Scan(&traceparent); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		a.logger.WarnContext(ctx, "could not read the trace context of a run", "run_id", job.Args.RunID, "err", err)
	}
	parent := ctx
	if traceparent != nil {
		if sc := tracectx.Parse(*traceparent); sc.IsValid() {
			parent = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.Int64(attrJobID, job.ID), attribute.Int(attrJobAttempt, job.Attempt),
		attribute.String(attrJobKind, job.Kind), attribute.String(attrQueue, job.Queue),
		attribute.Int64(attrRunID, job.Args.RunID), attribute.Int(attrStep, job.Args.Step))}
	if link := enqueuedBy(job.Metadata); link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
	}
	ctx, span := a.tel.tracer.Start(parent, "process "+job.Kind, opts...)
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// enqueuedBy is the span context that inserted a job, from its metadata.
func enqueuedBy(meta []byte) trace.SpanContext {
	var m map[string]any
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return trace.SpanContext{}
	}
	s, _ := m[metaTraceparent].(string)
	return tracectx.Parse(s)
}

// endRunSpans records the invoke_agent span of each run that ends in tx,
// with the identity its creation gave it, from its creation to now. Runs
// created while tracing was off have none and are skipped. The span is
// recorded before tx commits: an end that fails to commit and is made
// again records the run's span again, with the same identity.
func (a *Agent) endRunSpans(ctx context.Context, tx pgx.Tx, runs []*Run, status, errText string) error {
	if !a.tel.tracing() || len(runs) == 0 {
		return nil
	}
	byID := make(map[int64]*Run, len(runs))
	ids := make([]int64, len(runs))
	for i, r := range runs {
		byID[r.ID], ids[i] = r, r.ID
	}
	rows, err := tx.Query(ctx, `SELECT id, traceparent, coalesce(trace_parent_id, '') FROM gb_agent_research_runs
		WHERE id = ANY($1) AND traceparent IS NOT NULL`, ids)
	if err != nil {
		return fmt.Errorf("error reading the trace context of ended runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var tp, parentID string
		if err := rows.Scan(&id, &tp, &parentID); err != nil {
			return fmt.Errorf("error reading the trace context of ended runs: %w", err)
		}
		a.recordRunSpan(ctx, byID[id], tracectx.Parse(tp), parentID, status, errText)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error reading the trace context of ended runs: %w", err)
	}
	return nil
}

// recordRunSpan records the invoke_agent span of an ended run: self is
// its identity and parentID the span it hangs from.
func (a *Agent) recordRunSpan(ctx context.Context, run *Run, self trace.SpanContext, parentID, status, errText string) {
	if run == nil || !self.IsValid() {
		return
	}
	sctx := context.WithoutCancel(ctx)
	if pid, err := trace.SpanIDFromHex(parentID); err == nil {
		sctx = trace.ContextWithRemoteSpanContext(sctx, self.WithSpanID(pid))
	} else {
		sctx = trace.ContextWithSpanContext(sctx, trace.SpanContext{}) // a root
	}
	sctx = tracectx.WithIDs(sctx, self.TraceID(), self.SpanID())
	_, span := a.tel.tracer.Start(sctx, opInvokeAgent+" "+agentName(run), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(run.CreatedAt), trace.WithAttributes(
			attribute.String(attrOperation, opInvokeAgent), attribute.String(attrProvider, providerOf(a.modelFor(run))),
			attribute.String(attrAgentName, agentName(run)), attribute.String(attrAgentID, fmt.Sprint(run.ID)),
			attribute.String(attrRequestModel, run.Model), attribute.Int64(attrRunID, run.ID),
			attribute.Int64(attrRootID, run.RootID), attribute.String(attrStatus, status), attribute.Int(attrSteps, run.Steps),
			attribute.Int64(attrInputTokens, run.PromptTokens), attribute.Int64(attrOutputTokens, run.CompletionTokens),
			attribute.Int64(attrCacheRead, run.CachedTokens), attribute.Float64(attrCost, run.CostUSD)))
	if status != StatusSucceeded {
		span.SetAttributes(attribute.String(attrErrorType, status))
		span.SetStatus(codes.Error, errText)
	}
	span.End(trace.WithTimestamp(time.Now()))
}
