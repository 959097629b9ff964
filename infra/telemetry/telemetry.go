package telemetry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/gbresearch/gb/jobs/tracectx"
)

// Options say how a process sets up its telemetry.
type Options struct {
	// Service is the service.name of the process's telemetry unless
	// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) sets
	// one: gb-api, gb-worker, gb-scheduler, gb.
	Service string
	// Getenv reads a variable; nil means os.Getenv.
	Getenv func(string) string
}

// Telemetry is a process's tracer and meter providers and what flushes
// and stops them. A nil *Telemetry is off.
type Telemetry struct {
	// Tracer is the tracer provider; nil when tracing is off.
	Tracer trace.TracerProvider
	// Meter is the meter provider; nil when metrics are off.
	Meter metric.MeterProvider
	tp    *sdktrace.TracerProvider
	mp    *sdkmetric.MeterProvider
}

// Setup builds the process's telemetry from the OTEL_* variables: OTLP/HTTP
// exporters for each signal whose endpoint is set (and whose exporter is
// not none), nothing at all when OTEL_SDK_DISABLED is true or no endpoint
// is set. When a signal is on, its provider is also made the global one,
// and W3C trace context the global propagator.
func Setup(ctx context.Context, o Options) (*Telemetry, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if disabled(getenv) {
		return &Telemetry{}, nil
	}
	traces, err := signalConfig(getenv, EnvTracesExporter, EnvTracesEndpoint, EnvTracesProtocol, tracesPath)
	if err != nil {
		return nil, err
	}
	metrics, err := signalConfig(getenv, EnvMetricsExporter, EnvMetricsEndpoint, EnvMetricsProtocol, metricsPath)
	if err != nil {
		return nil, err
	}
	if traces.url == "" && metrics.url == "" {
		return &Telemetry{}, nil
	}
	res, err := newResource(ctx, getenv, o.Service)
	if err != nil {
		return nil, err
	}
	t := &Telemetry{}
	if traces.url != "" {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(traces.url))
		if err != nil {
			return nil, fmt.Errorf("error creating the OTLP trace exporter: %w", err)
		}
		t.setTracer(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
			sdktrace.WithIDGenerator(tracectx.IDGenerator{})))
	}
	if metrics.url != "" {
		exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(metrics.url))
		if err != nil {
			_ = t.Shutdown(ctx)
			return nil, fmt.Errorf("error creating the OTLP metric exporter: %w", err)
		}
		t.setMeter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)),
			sdkmetric.WithResource(res)))
	}
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if t.tp != nil {
		otel.SetTracerProvider(t.tp)
	}
	if t.mp != nil {
		otel.SetMeterProvider(t.mp)
	}
	return t, nil
}

// New builds telemetry that sends its spans to spans and lets reader read
// its metrics (either may be nil, for off), as Setup would but without
// the environment: for tests and benchmarks. It sets no global.
func New(spans sdktrace.SpanExporter, reader sdkmetric.Reader, service string) *Telemetry {
	res := resource.NewSchemaless(attribute.String(serviceNameAttr, service))
	t := &Telemetry{}
	if spans != nil {
		t.setTracer(sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res),
			sdktrace.WithIDGenerator(tracectx.IDGenerator{})))
	}
	if reader != nil {
		t.setMeter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res)))
	}
	return t
}

func (t *Telemetry) setTracer(tp *sdktrace.TracerProvider) { t.tp, t.Tracer = tp, tp }
func (t *Telemetry) setMeter(mp *sdkmetric.MeterProvider)  { t.mp, t.Meter = mp, mp }

// newResource describes the process: the service name (OTEL_SERVICE_NAME,
// else service), what OTEL_RESOURCE_ATTRIBUTES adds, and the SDK.
func newResource(ctx context.Context, getenv func(string) string, service string) (*resource.Resource, error) {
	opts := []resource.Option{resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String(serviceNameAttr, cmp.Or(service, "gb"))), resource.WithFromEnv()}
	if name := getenv(EnvServiceName); name != "" {
		opts = append(opts, resource.WithAttributes(attribute.String(serviceNameAttr, name)))
	}
	res, err := resource.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("error describing the process for telemetry: %w", err)
	}
	return res, nil
}

// Enabled reports whether any signal is exported.
func (t *Telemetry) Enabled() bool { return t != nil && (t.tp != nil || t.mp != nil) }

// Flush exports what the providers hold: the spans ended and the metrics
// gathered so far. A Lambda invocation calls it before it returns.
func (t *Telemetry) Flush(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	var errs []error
	if t.tp != nil {
		if err := t.tp.ForceFlush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("error flushing spans: %w", err))
		}
	}
	if t.mp != nil {
		if err := t.mp.ForceFlush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("error flushing metrics: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Shutdown flushes and stops the providers; a process calls it at exit.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	var errs []error
	if t.tp != nil {
		if err := t.tp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("error stopping the tracer provider: %w", err))
		}
	}
	if t.mp != nil {
		if err := t.mp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("error stopping the meter provider: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Flushing wraps a Lambda handler so that each invocation flushes the
// telemetry before it returns, on a context of its own: Lambda may freeze
// the process as soon as the handler returns. A failed flush is passed to
// report (nil ignores it), never to the caller.
func Flushing[In, Out any](t *Telemetry, report func(error), h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	if !t.Enabled() {
		return h
	}
	return func(ctx context.Context, in In) (Out, error) {
		out, err := h(ctx, in)
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if ferr := t.Flush(fctx); ferr != nil && report != nil {
			report(ferr)
		}
		return out, err
	}
}
