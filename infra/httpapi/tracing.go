package httpapi

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"
)

// StatusClientClosed is the status a request is answered with when its
// client went away before the answer (a long poll left by a page that
// navigated on, say): nobody reads it, and as a 4xx it is no server error
// in a trace or a 5xx alarm. nginx's 499 is the usual code for it.
const StatusClientClosed = 499

// traced serves each request through otelhttp: a server span with the
// HTTP semantic conventions (url.scheme, server.address,
// user_agent.original, http.response.status_code, ...) and the
// http.server.request.duration metric, the child of the W3C traceparent
// the request carries, if any: a research started by the request is then
// part of the caller's trace (jobs stores the span's context on the run).
// The span and the metric are named by the route the mux matches ("POST
// /v1/gb/research/{id}/cancel"), never by the path. The dashboard's
// static files are one route, staticRoute, in the metric, and make no
// span: a page load is dozens of them. With no tracer provider it returns
// next as is.
func traced(tp trace.TracerProvider, mp metric.MeterProvider, mux *http.ServeMux, next http.Handler) http.Handler {
	if tp == nil {
		return next
	}
	route := func(r *http.Request) (name, path string) {
		_, pattern := mux.Handler(r)
		if pattern == "" {
			return r.Method, ""
		}
		_, path, _ = strings.Cut(pattern, " ")
		return r.Method + " " + path, path
	}
	// Inside otelhttp's span: the route on the span and on the metric.
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, path := route(r); path != "" {
			trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("http.route", path))
			if l, ok := otelhttp.LabelerFromContext(r.Context()); ok {
				l.Add(attribute.String("http.route", path))
			}
		}
		next.ServeHTTP(w, r)
	})
	opts := []otelhttp.Option{
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			name, _ := route(r)
			return name
		}),
	}
	if mp != nil {
		opts = append(opts, otelhttp.WithMeterProvider(mp))
	}
	api := otelhttp.NewHandler(inner, "gb-api", opts...)
	static := next
	if mp != nil {
		static = otelhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			r.Pattern = r.Method + " " + staticRoute // what otelhttp takes the route from, once served
		}), "gb-ui", otelhttp.WithTracerProvider(nooptrace.NewTracerProvider()), otelhttp.WithMeterProvider(mp),
			otelhttp.WithPropagators(propagation.TraceContext{}))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isStaticAsset(r.URL.Path) {
			static.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// staticRoute is the one route of the dashboard's static files.
const staticRoute = "/ui/*"

// isStaticAsset says whether path is one of the dashboard's files (under
// /ui/), one route (staticRoute) with no span.
func isStaticAsset(path string) bool {
	return path == "/ui" || strings.HasPrefix(path, "/ui/")
}
