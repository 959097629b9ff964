package telemetry

import (
	"fmt"
	"strings"
	"time"
)

// The standard variables Setup reads (see the OpenTelemetry SDK
// environment variable specification). The exporters and the SDK read the
// others themselves: OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
// _CERTIFICATE, OTEL_BSP_*, OTEL_METRIC_EXPORT_INTERVAL,
// OTEL_TRACES_SAMPLER and OTEL_RESOURCE_ATTRIBUTES.
const (
	EnvSDKDisabled      = "OTEL_SDK_DISABLED"
	EnvServiceName      = "OTEL_SERVICE_NAME"
	EnvEndpoint         = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint   = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvMetricsEndpoint  = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
	EnvProtocol         = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol   = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvMetricsProtocol  = "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"
	EnvTracesExporter   = "OTEL_TRACES_EXPORTER"
	EnvMetricsExporter  = "OTEL_METRICS_EXPORTER"
	protocolHTTP        = "http/protobuf"
	exporterOTLP        = "otlp"
	exporterNone        = "none"
	tracesPath          = "/v1/traces"
	metricsPath         = "/v1/metrics"
	serviceNameAttr     = "service.name"
	instrumentationName = "github.com/gbresearch/gb"
)

// signal is what the variables say of one signal (traces or metrics).
type signal struct {
	// url is where to export it; "" when the signal is off.
	url string
}

// signalConfig reads the variables of one signal: its exporter (otlp, the
// default, or none), its endpoint (the signal's own, used as it is, or the
// common one with the signal's path appended) and its protocol (only
// http/protobuf is built in). No endpoint at all leaves the signal off.
func signalConfig(getenv func(string) string, exporterVar, endpointVar, protocolVar, path string) (signal, error) {
	switch e := strings.TrimSpace(getenv(exporterVar)); e {
	case "", exporterOTLP:
	case exporterNone:
		return signal{}, nil
	default:
		return signal{}, fmt.Errorf("%s=%q is not supported: use %s or %s", exporterVar, e, exporterOTLP, exporterNone)
	}
	url := strings.TrimSpace(getenv(endpointVar))
	if url == "" {
		if base := strings.TrimSpace(getenv(EnvEndpoint)); base != "" {
			url = strings.TrimRight(base, "/") + path
		}
	}
	if url == "" {
		return signal{}, nil
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return signal{}, fmt.Errorf("the OTLP endpoint %q must be an http:// or https:// URL", url)
	}
	for _, v := range []string{protocolVar, EnvProtocol} {
		if p := strings.TrimSpace(getenv(v)); p != "" {
			if p != protocolHTTP {
				return signal{}, fmt.Errorf("%s=%q is not supported: gb exports OTLP over %s", v, p, protocolHTTP)
			}
			break
		}
	}
	return signal{url: url}, nil
}

// disabled reports whether OTEL_SDK_DISABLED turns the SDK off.
func disabled(getenv func(string) string) bool {
	return strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true")
}

// flushTimeout bounds the flush at the end of a Lambda invocation.
const flushTimeout = 2 * time.Second
