package httpapi

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracingScope is the instrumentation scope of the API's spans.
const tracingScope = "github.com/gbresearch/gb/infra/httpapi"

// traced serves each request in a server span named by its method and the
// route the mux matches ("POST /v1/gb/research"), the child of the W3C
// traceparent the request carries, if any: a research started by the
// request is then part of the caller's trace (jobs stores the span's
// context on the run). With no tracer provider it returns next as is.
//
// It is a few lines rather than otelhttp: the API needs one span per
// request named by its route, and W3C trace context only.
func traced(tp trace.TracerProvider, mux *http.ServeMux, next http.Handler) http.Handler {
	if tp == nil {
		return next
	}
	tracer := tp.Tracer(tracingScope)
	prop := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		_, pattern := mux.Handler(r)
		name := r.Method
		attrs := []attribute.KeyValue{attribute.String("http.request.method", r.Method),
			attribute.String("url.path", r.URL.Path)}
		if pattern != "" {
			name = pattern
			if _, path, ok := strings.Cut(pattern, " "); ok {
				attrs = append(attrs, attribute.String("http.route", path))
			}
		}
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// statusWriter remembers the status code of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status and passes it on.
func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the writer underneath (a long
// poll's flushes and deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
