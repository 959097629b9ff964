// Package telemetry sets up OpenTelemetry for a gb process: traces and
// metrics exported over OTLP/HTTP with the official Go SDK, configured only
// by the standard OTEL_* environment variables, and off, at no cost, when
// none of them asks for an export.
//
// Setup returns a Telemetry whose providers are nil when a signal is off:
// the callers (jobs.Deps, httpapi.Deps) then trace and measure nothing, and
// no exporter, batcher or reader goroutine exists. A process calls Shutdown
// at exit; a Lambda function flushes after each invocation (Flushing),
// before Lambda freezes the process.
//
// The tracer provider gives spans the identity their context asks for
// (jobs/tracectx), so that a run's span can be recorded by a process other
// than the one that created the run. Trace context travels between
// processes as W3C traceparent only.
//
// It may import jobs/tracectx and nothing else of the project.
package telemetry
