package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
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
//   - every job is worked in the span of River's OpenTelemetry middleware
//     (otelriver, "river.work/<kind>"), linked to the span that enqueued
//     it (its metadata's traceparent, jobMetadata); the job of a run that
//     has not ended is a child of its run's span (jobTracing), and a step
//     job's span carries the run and step (startJob);
//   - the run's own span (invoke_agent) is recorded when the run ends, by
//     whichever process ends it, from its creation to its end
//     (endRunSpans): a sub-agent's is a child of its parent's run span
//     and a root's the root of the tree's trace, each linked to the span
//     that created it (the spawn_subagent call, the API request), whose
//     time it outlives. A run ended by a job is recorded once the job's
//     span has ended, so that every span of a tree lies within its
//     parent's time.

// metaTraceparent is the key of the job metadata that holds the traceparent
// of the span that inserted the job.
const metaTraceparent = "traceparent"

// traceRun gives a new run its trace identity, in the creating
// transaction, when tracing is on: the child of the span in ctx.
func (a *Service) traceRun(ctx context.Context, tx pgx.Tx, run *Run) error {
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
func (a *Service) runTrace(ctx context.Context) (traceparent, parentID string) {
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
func (a *Service) jobMetadata(ctx context.Context) []byte {
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
// tracing is on, gives the job's span (otelriver's, begun by the
// middleware) the job's run, step, id, attempt, kind and queue.
func (a *Service) startJob(ctx context.Context, job *river.Job[StepArgs]) (context.Context, func(err error)) {
	if job.AttemptedAt != nil && a.tel.metered {
		ready := job.ScheduledAt
		if job.CreatedAt.After(ready) {
			ready = job.CreatedAt // a step job is queued at its tree's start (treeOrder)
		}
		a.tel.queueWait.Record(ctx, max(job.AttemptedAt.Sub(ready), 0).Seconds(),
			metric.WithAttributes(attribute.String(attrQueue, job.Queue), attribute.Int(attrJobAttempt, job.Attempt)))
	}
	if a.tel.tracing() {
		trace.SpanFromContext(ctx).SetAttributes(attribute.Int64(attrJobID, job.ID), attribute.Int(attrJobAttempt, job.Attempt),
			attribute.String(attrJobKind, job.Kind), attribute.String(attrQueue, job.Queue),
			attribute.Int64(attrRunID, job.Args.RunID), attribute.Int(attrStep, job.Args.Step))
	}
	return ctx, func(error) {}
}

// jobTracing is the outermost River middleware of a tracing agent, before
// otelriver's: it puts the span of the job's run, when the job names a
// run (run_id) that has not ended, in the context the job's span begins
// in, and records the run spans the job ended once the job's span (and
// every span under it) has ended.
type jobTracing struct {
	river.MiddlewareDefaults
	agent *Service
}

// Work implements rivertype.WorkerMiddleware.
func (m *jobTracing) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	ended := &endedRuns{began: time.Now()}
	err := doInner(context.WithValue(m.agent.underRun(ctx, job), endedRunsKey{}, ended))
	ended.record()
	return err
}

// underRun is ctx with the span of the run job works on as its remote
// parent; ctx itself when the job names no run, or one that has ended or
// has no trace context.
func (a *Service) underRun(ctx context.Context, job *rivertype.JobRow) context.Context {
	var args struct {
		RunID int64 `json:"run_id"`
	}
	if json.Unmarshal(job.EncodedArgs, &args) != nil || args.RunID == 0 {
		return ctx
	}
	var traceparent *string
	if err := a.pool.QueryRow(ctx, `SELECT traceparent FROM gb_agent_research_runs WHERE id = $1 AND ended_at IS NULL`,
		args.RunID).Scan(&traceparent); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		a.logger.WarnContext(ctx, "could not read the trace context of a run", "run_id", args.RunID, "err", err)
	}
	if traceparent == nil {
		return ctx
	}
	if sc := tracectx.Parse(*traceparent); sc.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// endedRuns holds the spans of the runs a job ended, recorded when the
// job is done.
type endedRuns struct {
	mu    sync.Mutex
	began time.Time
	spans []func(began, end time.Time)
}

type endedRunsKey struct{}

// add holds a run's span for record, or records it now, ending now, when
// ctx is not a job's.
func (e *endedRuns) add(span func(began, end time.Time)) {
	if e == nil {
		span(time.Time{}, time.Now())
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.spans = append(e.spans, span)
}

// record records the spans held, all ending now: after the job's span,
// and a cancelled descendant no later than the run that ended it.
func (e *endedRuns) record() {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	for _, span := range e.spans {
		span(e.began, now)
	}
	e.spans = nil
}

// endRunSpans records the invoke_agent span of each run that ends in tx,
// with the identity its creation gave it, from its creation to its end
// (recordRunSpan: when the job ending it is done, else now). Runs created
// while tracing was off have none and are skipped. The span is recorded
// whether or not tx commits: an end that fails to commit and is made
// again records the run's span again, with the same identity.
func (a *Service) endRunSpans(ctx context.Context, tx pgx.Tx, runs []*Run, status, errText string) error {
	if !a.tel.tracing() || len(runs) == 0 {
		return nil
	}
	byID := make(map[int64]*Run, len(runs))
	ids := make([]int64, len(runs))
	for i, r := range runs {
		byID[r.ID], ids[i] = r, r.ID
	}
	rows, err := tx.Query(ctx, `SELECT r.id, r.traceparent, coalesce(r.trace_parent_id, ''), coalesce(p.traceparent, '')
		FROM gb_agent_research_runs r LEFT JOIN gb_agent_research_runs p ON p.id = r.parent_id
		WHERE r.id = ANY($1) AND r.traceparent IS NOT NULL`, ids)
	if err != nil {
		return fmt.Errorf("error reading the trace context of ended runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var tp, createdBy, parentRun string
		if err := rows.Scan(&id, &tp, &createdBy, &parentRun); err != nil {
			return fmt.Errorf("error reading the trace context of ended runs: %w", err)
		}
		a.recordRunSpan(ctx, byID[id], tracectx.Parse(tp), createdBy, tracectx.Parse(parentRun), status, errText)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error reading the trace context of ended runs: %w", err)
	}
	return nil
}

// recordRunSpan records the invoke_agent span of an ended run, once the
// job that ended it is done (endedRuns), or now: self is its identity,
// createdBy the span that created it (linked to) and parentRun the span of
// its parent run (its parent; none for a root). It begins when the run
// was created, or when that job began if the database's clock says later.
func (a *Service) recordRunSpan(ctx context.Context, run *Run, self trace.SpanContext, createdBy string,
	parentRun trace.SpanContext, status, errText string) {
	if run == nil || !self.IsValid() {
		return
	}
	sctx := context.WithoutCancel(ctx)
	if parentRun.IsValid() && parentRun.TraceID() == self.TraceID() {
		sctx = trace.ContextWithRemoteSpanContext(sctx, parentRun)
	} else {
		sctx = trace.ContextWithSpanContext(sctx, trace.SpanContext{}) // a root
	}
	sctx = tracectx.WithIDs(sctx, self.TraceID(), self.SpanID())
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String(attrOperation, opInvokeAgent), attribute.String(attrProvider, providerOf(a.modelFor(run))),
		attribute.String(attrAgentName, agentName(run)), attribute.String(attrAgentID, fmt.Sprint(run.ID)),
		attribute.String(attrRequestModel, run.Model), attribute.Int64(attrRunID, run.ID),
		attribute.Int64(attrRootID, run.RootID), attribute.String(attrStatus, status), attribute.Int(attrSteps, run.Steps),
		attribute.Int64(attrInputTokens, run.PromptTokens), attribute.Int64(attrOutputTokens, run.CompletionTokens),
		attribute.Int64(attrCacheRead, run.CachedTokens), attribute.Float64(attrCost, run.CostUSD))}
	if pid, err := trace.SpanIDFromHex(createdBy); err == nil {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: self.WithSpanID(pid)}))
	}
	r := *run
	held, _ := ctx.Value(endedRunsKey{}).(*endedRuns)
	held.add(func(jobBegan, end time.Time) {
		start := r.CreatedAt
		if !jobBegan.IsZero() && jobBegan.Before(start) {
			start = jobBegan
		}
		_, span := a.tel.tracer.Start(sctx, opInvokeAgent+" "+agentName(&r), append(opts, trace.WithTimestamp(start))...)
		if status != StatusSucceeded {
			span.SetAttributes(attribute.String(attrErrorType, status))
			span.SetStatus(codes.Error, errText)
		}
		span.End(trace.WithTimestamp(end))
	})
}
