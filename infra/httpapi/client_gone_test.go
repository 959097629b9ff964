package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gbresearch/gb/infra/httpapi"
)

// TestClientGoneIsNoServerError: a request whose client went away before
// it was answered (a long poll left by a page that navigated on) is
// answered 499, and its span is no error: only the server's own failures
// count as 5xx in a trace or an alarm.
func TestClientGoneIsNoServerError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	exp := tracetest.NewInMemoryExporter()
	h := httpapi.New(httpapi.Deps{Service: b.agent, Tracer: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodGet, "/v1/gb/research/1/events?wait=20", nil).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+b.alice)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != httpapi.StatusClientClosed {
		t.Fatalf("a request whose client left was answered %d %s, want %d", rec.Code, rec.Body, httpapi.StatusClientClosed)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the request's", len(spans))
	}
	if s := spans[0]; s.Status.Code.String() == "Error" || s.Name != "GET /v1/gb/research/{id}/events" {
		t.Errorf("span %q with status %v, want the route's and no error", s.Name, s.Status)
	}
}
