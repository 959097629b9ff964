package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestTracedContinuesTheTraceparent: a request is served in a server span
// named by the route the mux matches, the child of the request's W3C
// traceparent, whose context the handler sees, with the answer's status;
// with no tracer provider nothing is wrapped.
func TestTracedContinuesTheTraceparent(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	var seen trace.SpanContext
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/gb/research/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		seen = trace.SpanContextFromContext(r.Context())
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	mux.HandleFunc("GET /ui/", func(w http.ResponseWriter, r *http.Request) {})
	h := traced(tp, mp, mux, mux)
	r := httptest.NewRequest(http.MethodPost, "/v1/gb/research/7/cancel", nil)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	r.Header.Set("User-Agent", "gb-test/1")
	h.ServeHTTP(httptest.NewRecorder(), r)
	// The dashboard's files make no span, and are one route.
	for _, p := range []string{"/ui/index.html", "/ui/js/app.js", "/ui/css/app.css"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, p, nil))
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Name != "POST /v1/gb/research/{id}/cancel" || s.SpanKind != trace.SpanKindServer ||
		s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("span %q kind %s in %s under %s", s.Name, s.SpanKind, s.SpanContext.TraceID(), s.Parent.SpanID())
	}
	if seen.SpanID() != s.SpanContext.SpanID() {
		t.Errorf("the handler saw span %s, not the request's %s", seen.SpanID(), s.SpanContext.SpanID())
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs["http.route"] != "/v1/gb/research/{id}/cancel" || attrs["http.response.status_code"] != "503" ||
		attrs["http.request.method"] != "POST" || s.Status.Code.String() != "Error" {
		t.Errorf("attributes %v, status %v", attrs, s.Status)
	}
	for k, want := range map[string]string{"url.scheme": "http", "server.address": "example.com", "user_agent.original": "gb-test/1", "url.path": "/v1/gb/research/7/cancel"} {
		if attrs[k] != want {
			t.Errorf("attribute %s = %q, want %q (all: %v)", k, attrs[k], want, attrs)
		}
	}
	// The request's duration, by route.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var routes []string
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "http.server.request.duration" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				v, _ := dp.Attributes.Value("http.route")
				routes = append(routes, v.AsString())
				counts[v.AsString()] += dp.Count
			}
		}
	}
	slices.Sort(routes)
	if !slices.Equal(routes, []string{"/ui/*", "/v1/gb/research/{id}/cancel"}) || counts["/ui/*"] != 3 {
		t.Errorf("http.server.request.duration by route: %v (counts %v), want the API's route and the three files as /ui/*",
			routes, counts)
	}
	if traced(nil, nil, mux, mux) != http.Handler(mux) {
		t.Error("with no tracer provider the handler is wrapped")
	}
}
