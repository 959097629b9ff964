package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file is the agent's OpenTelemetry instrumentation: the spans of a
// step job, a step, a model call and a tool call, and the metrics of
// steps, tokens, cost, model latency, queue latency, refusals for want of
// capacity, repairs and what the providers' breakers did. The spans and metrics of model calls and tools
// follow the OpenTelemetry semantic conventions for generative AI; the
// rest are gb's own (gb.*). The trace context of runs is in trace.go.
//
// With no tracer provider (Deps.Tracer nil) no span is made and no trace
// context is read or written; with no meter provider nothing is measured.

// scopeName is the instrumentation scope of the agent's spans and metrics.
const scopeName = "github.com/gbresearch/gb/jobs"

// Attribute names of the OpenTelemetry semantic conventions for generative
// AI, and of gb's own.
const (
	attrOperation      = "gen_ai.operation.name"
	attrProvider       = "gen_ai.provider.name"
	attrRequestModel   = "gen_ai.request.model"
	attrResponseModel  = "gen_ai.response.model"
	attrResponseID     = "gen_ai.response.id"
	attrServerAddress  = "server.address"
	attrServerPort     = "server.port"
	attrMaxTokens      = "gen_ai.request.max_tokens"
	attrFinishReasons  = "gen_ai.response.finish_reasons"
	attrInputTokens    = "gen_ai.usage.input_tokens"
	attrOutputTokens   = "gen_ai.usage.output_tokens"
	attrCacheRead      = "gen_ai.usage.cache_read.input_tokens"
	attrReasoning      = "gen_ai.usage.reasoning.output_tokens"
	attrTokenType      = "gen_ai.token.type"
	attrToolName       = "gen_ai.tool.name"
	attrToolCallID     = "gen_ai.tool.call.id"
	attrToolType       = "gen_ai.tool.type"
	attrAgentName      = "gen_ai.agent.name"
	attrAgentID        = "gen_ai.agent.id"
	attrConversationID = "gen_ai.conversation.id"
	attrErrorType      = "error.type"
	attrRunID          = "gb.run.id"
	attrRootID         = "gb.root.id"
	attrStep           = "gb.step"
	attrCallID         = "gb.call.id"
	attrCost           = "gb.usage.cost_usd"
	attrStatus         = "gb.run.status"
	attrSteps          = "gb.run.steps"
	attrJobID          = "river.job.id"
	attrJobAttempt     = "river.job.attempt"
	attrJobKind        = "river.job.kind"
	attrQueue          = "river.queue"
)

// Values of gen_ai.operation.name and gen_ai.token.type.
const (
	opChat        = "chat"
	opExecuteTool = "execute_tool"
	opInvokeAgent = "invoke_agent"
	tokenInput    = "input"
	tokenOutput   = "output"
)

// GenAIProvider is implemented by a model that knows its provider's
// gen_ai.provider.name ("aws.bedrock", say). A model without it is taken
// for an OpenAI-compatible client when it has a Profile, and for one of
// gb's own ("gb") otherwise.
type GenAIProvider interface {
	GenAIProvider() string
}

// GenAIServer is implemented by a model that calls a server: its host and
// port, the server.address and server.port of its chat spans.
type GenAIServer interface {
	ServerAddress() (host string, port int)
}

// SpanModel is implemented by a model whose Name is no fit for a span's
// name (the offline policy's is a sentence): the short model id its chat
// spans are named by and record as gen_ai.request.model.
type SpanModel interface {
	SpanModel() string
}

// spanModel is the model id of a model's chat spans.
func spanModel(m llm.Model) string {
	if s, ok := m.(SpanModel); ok {
		return s.SpanModel()
	}
	return m.Name()
}

// providerOf is the gen_ai.provider.name of a model.
func providerOf(m llm.Model) string {
	if p, ok := m.(GenAIProvider); ok {
		return p.GenAIProvider()
	}
	if _, ok := m.(llm.Profiler); ok {
		return "openai"
	}
	return "gb"
}

// instruments are the agent's tracer and metric instruments.
type instruments struct {
	// tracer is nil when tracing is off; metered is false when metrics
	// are, and nothing is then recorded.
	tracer      trace.Tracer
	metered     bool
	steps       metric.Int64Counter
	tokens      metric.Int64Histogram
	cost        metric.Float64Counter
	duration    metric.Float64Histogram
	queueWait   metric.Float64Histogram
	rateLimited metric.Int64Counter
	repairs     metric.Int64Counter
	breaker     metric.Int64Counter
}

// Bucket boundaries the conventions advise for gen_ai.client.token.usage
// and gen_ai.client.operation.duration; queue waits use the latter.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// newInstruments makes the instruments from the providers (nil for off).
func newInstruments(tp trace.TracerProvider, mp metric.MeterProvider) (*instruments, error) {
	in := &instruments{}
	if tp != nil {
		in.tracer = tp.Tracer(scopeName)
	}
	in.metered = mp != nil
	if mp == nil {
		mp = noopmetric.NewMeterProvider()
	}
	m := mp.Meter(scopeName)
	var errs [8]error
	in.steps, errs[0] = m.Int64Counter("gb.steps", metric.WithUnit("{step}"),
		metric.WithDescription("Steps committed by research agents."))
	in.tokens, errs[1] = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	in.cost, errs[2] = m.Float64Counter("gb.cost", metric.WithUnit("USD"),
		metric.WithDescription("What the steps' model calls cost, in US dollars."))
	in.duration, errs[3] = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	in.queueWait, errs[4] = m.Float64Histogram("gb.queue.wait", metric.WithUnit("s"),
		metric.WithDescription("Time from when a step job could run to when a worker started it."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	in.rateLimited, errs[5] = m.Int64Counter("gb.model.rate_limited", metric.WithUnit("{call}"),
		metric.WithDescription("Model calls the provider refused for want of capacity (HTTP 429)."))
	in.repairs, errs[6] = m.Int64Counter("gb.maintenance.repairs", metric.WithUnit("{repair}"),
		metric.WithDescription("Repairs made by the maintenance pass, by kind (gb.repair.kind)."))
	in.breaker, errs[7] = m.Int64Counter("gb.provider.breaker", metric.WithUnit("{event}"),
		metric.WithDescription("What the providers' shared breakers did, by model and gb.breaker.event: "+
			"opened (after transient failures in a row), probe (a call let out while open), closed (a probe answered)."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("error creating the agent's metric instruments: %w", err)
	}
	return in, nil
}

// tracing reports whether spans are made.
func (in *instruments) tracing() bool { return in.tracer != nil }

// complete makes a step's model call, in a chat span with the request's
// and the answer's GenAI attributes, and records its duration, its tokens
// and whether the provider refused it for want of capacity.
func (a *Service) complete(ctx context.Context, run *Run, m llm.Model, req llm.Request) (llm.Response, error) {
	in := a.tel
	if !in.tracing() && !in.metered {
		return m.Complete(ctx, req)
	}
	provider := providerOf(m)
	var span trace.Span
	if in.tracing() {
		model := spanModel(m)
		ctx, span = in.tracer.Start(ctx, opChat+" "+model, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String(attrOperation, opChat), attribute.String(attrProvider, provider),
				attribute.String(attrRequestModel, model), attribute.Int(attrMaxTokens, req.MaxCompletionTokens),
				attribute.String(attrConversationID, fmt.Sprint(run.ID)), attribute.String(attrCallID, req.ID)))
		if s, ok := m.(GenAIServer); ok {
			if host, port := s.ServerAddress(); host != "" {
				span.SetAttributes(attribute.String(attrServerAddress, host), attribute.Int(attrServerPort, port))
			}
		}
	}
	began := time.Now()
	resp, err := m.Complete(ctx, req)
	elapsed := time.Since(began)
	use := resp.Usage
	var ce *llm.CallError
	if err != nil && errors.As(err, &ce) {
		use = ce.Usage
	}
	common := []attribute.KeyValue{attribute.String(attrOperation, opChat), attribute.String(attrProvider, provider),
		attribute.String(attrRequestModel, m.Name())}
	durAttrs := common
	if err != nil {
		durAttrs = append(durAttrs[:len(durAttrs):len(durAttrs)], attribute.String(attrErrorType, modelErrorType(err)))
		if errors.Is(err, llm.ErrRateLimited) {
			in.rateLimited.Add(ctx, 1, metric.WithAttributes(common...))
		}
	}
	in.duration.Record(ctx, elapsed.Seconds(), metric.WithAttributes(durAttrs...))
	if !use.Zero() {
		in.tokens.Record(ctx, int64(use.PromptTokens), metric.WithAttributes(append(common[:3:3], attribute.String(attrTokenType, tokenInput))...))
		in.tokens.Record(ctx, int64(use.CompletionTokens), metric.WithAttributes(append(common[:3:3], attribute.String(attrTokenType, tokenOutput))...))
	}
	if span != nil {
		endChat(span, m, resp, use, err)
	}
	return resp, err
}

// endChat records the answer (or the failure) of a model call on its span
// and ends it.
func endChat(span trace.Span, m llm.Model, resp llm.Response, use llm.Usage, err error) {
	span.SetAttributes(attribute.Int(attrInputTokens, use.PromptTokens), attribute.Int(attrOutputTokens, use.CompletionTokens),
		attribute.Int(attrCacheRead, use.CachedPromptTokens), attribute.Int(attrReasoning, use.ReasoningTokens),
		attribute.Float64(attrCost, use.CostUSD))
	if err != nil {
		span.SetAttributes(attribute.String(attrErrorType, modelErrorType(err)))
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(attribute.String(attrResponseModel, spanModel(m)))
		if resp.ID != "" {
			span.SetAttributes(attribute.String(attrResponseID, resp.ID))
		}
		if resp.FinishReason != "" {
			span.SetAttributes(attribute.StringSlice(attrFinishReasons, []string{resp.FinishReason}))
		}
	}
	span.End()
}

// modelErrorType is the error.type of a failed model call: which of the
// llm sentinels it is, or _OTHER.
func modelErrorType(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{{llm.ErrRateLimited, "rate_limited"}, {llm.ErrTooLarge, "too_large"}, {llm.ErrContextLength, "context_length"},
		{llm.ErrUnusable, "unusable"}, {llm.ErrTransient, "transient"}, {llm.ErrPermanent, "permanent"},
		{context.DeadlineExceeded, "timeout"}, {context.Canceled, "canceled"}} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "_OTHER"
}

// startTool begins the execute_tool span of a tool call (a no-op when
// tracing is off); end records whether the tool failed (a tool error the
// model is told about, or an infrastructure error) and ends it.
func (a *Service) startTool(ctx context.Context, run *Run, step int, call llm.ToolCall) (context.Context, func(failed bool, err error)) {
	if !a.tel.tracing() {
		return ctx, func(bool, error) {}
	}
	ctx, span := a.tel.tracer.Start(ctx, opExecuteTool+" "+call.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(attrOperation, opExecuteTool), attribute.String(attrToolName, call.Name),
			attribute.String(attrToolCallID, call.ID), attribute.String(attrToolType, "function"),
			attribute.Int64(attrRunID, run.ID), attribute.Int(attrStep, step)))
	return ctx, func(failed bool, err error) {
		switch {
		case err != nil:
			span.SetAttributes(attribute.String(attrErrorType, "infrastructure"))
			span.SetStatus(codes.Error, err.Error())
		case failed:
			span.SetAttributes(attribute.String(attrErrorType, "tool_error"))
			span.SetStatus(codes.Error, "the tool answered with an error")
		}
		span.End()
	}
}

// startStep begins the span of a step (a no-op when tracing is off); end
// records how it ended and ends it.
func (a *Service) startStep(ctx context.Context, run *Run, step int) (context.Context, func(err error)) {
	if !a.tel.tracing() {
		return ctx, func(error) {}
	}
	ctx, span := a.tel.tracer.Start(ctx, "step", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.Int64(attrRunID, run.ID), attribute.Int64(attrRootID, run.RootID),
			attribute.Int(attrStep, step), attribute.String(attrAgentName, agentName(run))))
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// stepCommitted counts a committed step and what it cost.
func (a *Service) stepCommitted(ctx context.Context, run *Run, use llm.Usage) {
	if !a.tel.metered {
		return
	}
	model := attribute.String(attrRequestModel, run.Model)
	a.tel.steps.Add(ctx, 1, metric.WithAttributes(model))
	if use.CostUSD > 0 {
		a.tel.cost.Add(ctx, use.CostUSD, metric.WithAttributes(model))
	}
}

// agentName is the gen_ai.agent.name of a run: a sub-agent's name, or
// "research" for a root.
func agentName(run *Run) string {
	if run.Name == "" {
		return "research"
	}
	return run.Name
}

// countRepairs counts what a maintenance pass repaired, by kind: runs with
// no way forward given a job, ended as lost or resumed, jobs of dead or
// stuck workers rescued, and calls of dead workers settled.
func (a *Service) countRepairs(ctx context.Context, res MaintainResult) {
	if !a.tel.metered {
		return
	}
	for kind, n := range map[string]int{"repaired": res.Repaired, "lost": res.Lost, "resumed": res.Resumed,
		"rescued": res.Rescued, "lost_calls": res.LostCalls} {
		if n > 0 {
			a.tel.repairs.Add(ctx, int64(n), metric.WithAttributes(attribute.String("gb.repair.kind", kind)))
		}
	}
}

// countBreaker counts what a model's breaker did (opened, probe, closed).
func (a *Service) countBreaker(ctx context.Context, model, event string) {
	if !a.tel.metered {
		return
	}
	a.tel.breaker.Add(ctx, 1, metric.WithAttributes(attribute.String(attrRequestModel, model),
		attribute.String("gb.breaker.event", event)))
}
