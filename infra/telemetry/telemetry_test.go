package telemetry

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestSetupIsOffWithoutAnEndpoint: no variable, an exporter of none, or
// the SDK disabled leave both signals off: no provider, nothing to flush.
func TestSetupIsOffWithoutAnEndpoint(t *testing.T) {
	t.Parallel()
	for _, vars := range []map[string]string{
		{},
		{EnvServiceName: "x"},
		{EnvEndpoint: "http://127.0.0.1:4318", EnvSDKDisabled: "TRUE"},
		{EnvEndpoint: "http://127.0.0.1:4318", EnvTracesExporter: "none", EnvMetricsExporter: "none"},
	} {
		tel, err := Setup(context.Background(), Options{Getenv: env(vars)})
		if err != nil || tel.Enabled() || tel.Tracer != nil || tel.Meter != nil {
			t.Errorf("%v: %+v, %v; want off", vars, tel, err)
		}
		if err := tel.Flush(context.Background()); err != nil {
			t.Errorf("%v: flush: %v", vars, err)
		}
	}
	var none *Telemetry
	if none.Enabled() || none.Shutdown(context.Background()) != nil {
		t.Error("a nil Telemetry is not off")
	}
}

// TestSignalConfig: each signal's URL from its own endpoint, used as it
// is, or the common one with its path; unsupported exporters, protocols
// and URLs are errors that name the variable.
func TestSignalConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vars      map[string]string
		url, fail string
	}{
		{vars: map[string]string{EnvEndpoint: "http://collector:4318/"}, url: "http://collector:4318/v1/traces"},
		{vars: map[string]string{EnvEndpoint: "http://a:4318", EnvTracesEndpoint: "https://b/otlp/traces"}, url: "https://b/otlp/traces"},
		{vars: map[string]string{EnvEndpoint: "http://a:4318", EnvTracesExporter: "none"}},
		{vars: map[string]string{EnvEndpoint: "http://a:4318", EnvProtocol: "http/protobuf"}, url: "http://a:4318/v1/traces"},
		{vars: map[string]string{EnvEndpoint: "http://a:4318", EnvProtocol: "grpc"}, fail: EnvProtocol},
		{vars: map[string]string{EnvEndpoint: "http://a:4318", EnvTracesProtocol: "http/json", EnvProtocol: "http/protobuf"}, fail: EnvTracesProtocol},
		{vars: map[string]string{EnvEndpoint: "http://a:4318", EnvTracesExporter: "zipkin"}, fail: EnvTracesExporter},
		{vars: map[string]string{EnvEndpoint: "a:4318"}, fail: "http://"},
	} {
		sig, err := signalConfig(env(tc.vars), EnvTracesExporter, EnvTracesEndpoint, EnvTracesProtocol, tracesPath)
		switch {
		case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)):
			t.Errorf("%v: %v; want an error naming %s", tc.vars, err, tc.fail)
		case tc.fail == "" && (err != nil || sig.url != tc.url):
			t.Errorf("%v: %q, %v; want %q", tc.vars, sig.url, err, tc.url)
		}
	}
}

// TestSetupWithAnEndpoint: an endpoint turns both signals on, with the
// service name of OTEL_SERVICE_NAME over the process's default; Shutdown
// stops them.
func TestSetupWithAnEndpoint(t *testing.T) {
	t.Parallel()
	tel, err := Setup(context.Background(), Options{Service: "gb-test",
		Getenv: env(map[string]string{EnvEndpoint: "http://127.0.0.1:1", EnvMetricsExporter: "none"})})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.Enabled() || tel.Tracer == nil || tel.Meter != nil {
		t.Fatalf("%+v: want traces on, metrics off", tel)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := Setup(context.Background(), Options{Getenv: env(map[string]string{EnvEndpoint: "http://a",
		EnvMetricsProtocol: "grpc"})}); err == nil {
		t.Error("a gRPC metrics protocol was accepted")
	}
}

// TestFlushingFlushesEachInvocation: the wrapped handler's spans are
// exported when it returns, its result and error passed on, and a failed
// flush reported, never returned.
func TestFlushingFlushesEachInvocation(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tel := New(exp, sdkmetric.NewManualReader(), "gb-test")
	defer tel.Shutdown(context.Background())
	boom := errors.New("boom")
	h := Flushing(tel, func(err error) { t.Errorf("flush failed: %v", err) }, func(ctx context.Context, n int) (int, error) {
		_, span := tel.Tracer.Tracer("t").Start(ctx, "invocation")
		span.End()
		return n + 1, boom
	})
	out, err := h(context.Background(), 1)
	if out != 2 || !errors.Is(err, boom) {
		t.Fatalf("%d, %v", out, err)
	}
	if spans := exp.GetSpans(); len(spans) != 1 || spans[0].Name != "invocation" {
		t.Fatalf("exported %v after the invocation; want its span", spans)
	}
}
