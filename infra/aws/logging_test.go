package aws_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	gbaws "github.com/gbresearch/gb/infra/aws"
)

func TestLogLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, gb, lambda string
		gbLevel, want    slog.Level
		warns            bool
	}{
		{name: "neither", gbLevel: slog.LevelInfo, want: slog.LevelInfo},
		{name: "ours alone (text format)", gb: "debug", gbLevel: slog.LevelDebug, want: slog.LevelDebug},
		{name: "Lambda's alone", lambda: "DEBUG", gbLevel: slog.LevelInfo, want: slog.LevelDebug},
		{name: "both debug", gb: "debug", lambda: "DEBUG", gbLevel: slog.LevelDebug, want: slog.LevelDebug},
		{name: "Lambda filters debug out", gb: "debug", lambda: "INFO", gbLevel: slog.LevelDebug, want: slog.LevelInfo, warns: true},
		{name: "ours is stricter", gb: "error", lambda: "WARN", gbLevel: slog.LevelError, want: slog.LevelError, warns: true},
		{name: "trace is below debug", lambda: "trace", gbLevel: slog.LevelInfo, want: slog.LevelDebug - 4},
		{name: "unknown Lambda level", gb: "warn", lambda: "LOUD", gbLevel: slog.LevelWarn, want: slog.LevelWarn, warns: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"GB_LOG_LEVEL": tc.gb, gbaws.EnvLambdaLogLevel: tc.lambda}
			got, warning := gbaws.LogLevel(func(k string) string { return env[k] }, tc.gbLevel)
			if got != tc.want || (warning != "") != tc.warns {
				t.Fatalf("got %v, warning %q; want %v, warning %v", got, warning, tc.want, tc.warns)
			}
		})
	}
}

// TestLoggerCarriesRequestIDs: a record logged with an invocation's
// context carries its Lambda request id, in Lambda's JSON key names.
func TestLoggerCarriesRequestIDs(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	log := gbaws.NewLogger(&out, "JSON", slog.LevelDebug)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	log.DebugContext(ctx, "with context")
	log.Debug("without context")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 records, got %q", out.String())
	}
	var first, second map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first[gbaws.RequestIDKey] != "req-1" || first["message"] != "with context" || first["level"] != "DEBUG" || first["timestamp"] == nil {
		t.Errorf("record with the invocation's context: %v", first)
	}
	if _, ok := second[gbaws.RequestIDKey]; ok {
		t.Errorf("a record outside any invocation has a request id: %v", second)
	}
	out.Reset()
	gbaws.NewLogger(&out, "JSON", slog.LevelInfo).Debug("dropped")
	if out.Len() != 0 {
		t.Errorf("a debug record passed an info logger: %s", out.String())
	}
}
