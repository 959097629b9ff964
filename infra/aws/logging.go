package aws

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/logs"
)

// Settings Lambda gives a function from its LoggingConfig.
const (
	// EnvLambdaLogFormat is LoggingConfig.LogFormat: JSON or Text.
	EnvLambdaLogFormat = "AWS_LAMBDA_LOG_FORMAT"
	// EnvLambdaLogLevel is LoggingConfig.ApplicationLogLevel (TRACE,
	// DEBUG, INFO, WARN, ERROR, FATAL), set with the JSON format only.
	// Lambda drops JSON records below it.
	EnvLambdaLogLevel = "AWS_LAMBDA_LOG_LEVEL"
)

// Keys of the ids every record of an invocation carries.
const (
	// RequestIDKey is the Lambda request id (lambdacontext's name for it).
	RequestIDKey = "requestId"
	// APIRequestIDKey is API Gateway's request id, in the API's records:
	// the id of API Gateway's access logs and of its x-amzn-RequestId
	// answer header.
	APIRequestIDKey = "apiRequestId"
)

// lambdaLevels are ApplicationLogLevel's values as slog levels.
var lambdaLevels = map[string]slog.Level{
	"TRACE": slog.LevelDebug - 4,
	"DEBUG": slog.LevelDebug,
	"INFO":  slog.LevelInfo,
	"WARN":  slog.LevelWarn,
	"ERROR": slog.LevelError,
	"FATAL": slog.LevelError + 4,
}

// LogLevel returns the level a function logs at, from GB_LOG_LEVEL
// (already parsed into gbLevel) and Lambda's AWS_LAMBDA_LOG_LEVEL: the
// higher of the two, since Lambda drops the records below its own. When
// both are set and differ, warning says so and how to make them agree
// (template.yaml sets both from its LogLevel parameter).
func LogLevel(getenv func(string) string, gbLevel slog.Level) (level slog.Level, warning string) {
	raw := strings.TrimSpace(getenv(EnvLambdaLogLevel))
	if raw == "" {
		return gbLevel, ""
	}
	lambdaLevel, ok := lambdaLevels[strings.ToUpper(raw)]
	if !ok {
		return gbLevel, fmt.Sprintf("%s=%q is not a Lambda log level; logging at %s's level", EnvLambdaLogLevel, raw, config.EnvLogLevel)
	}
	if getenv(config.EnvLogLevel) == "" || lambdaLevel == gbLevel {
		return lambdaLevel, ""
	}
	level = max(lambdaLevel, gbLevel)
	return level, fmt.Sprintf("%s=%s and Lambda's ApplicationLogLevel (%s=%s) differ; logging at the higher; set both from one value (template.yaml's LogLevel)",
		config.EnvLogLevel, getenv(config.EnvLogLevel), EnvLambdaLogLevel, raw)
}

// NewLogger returns a Lambda logger that writes to w, as JSON when format
// is "JSON" (Lambda's key names: timestamp, level, message) and as text
// otherwise, drops records below level, and adds the Lambda request id to
// every record logged with an invocation's context. An outage of the
// database is logged once, then summarized (logs.Throttle).
func NewLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	return newLogger(w, format, level, nil)
}

func newLogger(w io.Writer, format string, level slog.Level, current *atomic.Pointer[Invocation]) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: logs.InertAttrs(lambdacontext.ReplaceAttr)}
	var h slog.Handler
	if strings.EqualFold(format, "JSON") {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(logs.NewThrottle(&idHandler{Handler: h, current: current}, logs.ThrottleOptions{}))
}

// Invocation identifies the invocation under way.
type Invocation struct {
	// RequestID is the Lambda request id.
	RequestID string
	// APIRequestID is API Gateway's request id (the API only).
	APIRequestID string
}

// Begin records the invocation ctx belongs to (and, for the API, API
// Gateway's request id) so that every record logged until end is called
// carries their ids, whatever context it is logged with: River's, the
// pool's and a job's records included. Lambda runs one invocation at a
// time per execution environment.
func (r *Runtime) Begin(ctx context.Context, apiRequestID string) (end func()) {
	if r.current == nil { // a Runtime not made by Setup
		return func() {}
	}
	inv := &Invocation{APIRequestID: apiRequestID}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		inv.RequestID = lc.AwsRequestID
	}
	r.current.Store(inv)
	return func() { r.current.CompareAndSwap(inv, nil) }
}

// Wrap returns h with Begin and its end around each invocation.
func Wrap[E, R any](r *Runtime, h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, ev E) (R, error) {
		defer r.Begin(ctx, "")()
		return h(ctx, ev)
	}
}

// idHandler adds the ids of the invocation under way, or else of the
// Lambda context of the record's context, to each record.
type idHandler struct {
	slog.Handler
	current *atomic.Pointer[Invocation]
}

func (h *idHandler) Handle(ctx context.Context, rec slog.Record) error {
	var inv Invocation
	if h.current != nil {
		if p := h.current.Load(); p != nil {
			inv = *p
		}
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok && inv.RequestID == "" {
		inv.RequestID = lc.AwsRequestID
	}
	if inv.RequestID != "" {
		rec.AddAttrs(slog.String(RequestIDKey, inv.RequestID))
	}
	if inv.APIRequestID != "" {
		rec.AddAttrs(slog.String(APIRequestIDKey, inv.APIRequestID))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h *idHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &idHandler{Handler: h.Handler.WithAttrs(attrs), current: h.current}
}

func (h *idHandler) WithGroup(name string) slog.Handler {
	return &idHandler{Handler: h.Handler.WithGroup(name), current: h.current}
}
