// Command scheduler is the Lambda that EventBridge Scheduler invokes with a
// schedule's Input JSON; it starts the research the schedule describes,
// once per scheduled time (see functions/scheduler/schedule).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/gbresearch/gb/functions/scheduler/schedule"
	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/telemetry"
	"github.com/gbresearch/gb/jobs"
)

func main() {
	ctx := context.Background()
	rt, err := gbaws.Setup(ctx, gbaws.SetupParams{AppName: "gb-scheduler", MaxConns: 2})
	if err != nil {
		fatal(err)
	}
	// Traces and metrics from the OTEL_* variables (off when unset),
	// flushed after each invocation.
	tel, err := telemetry.Setup(ctx, telemetry.Options{Service: "gb-scheduler"})
	if err != nil {
		fatal(err)
	}
	agent, err := jobs.New(jobs.Deps{Pool: rt.Pool, Model: rt.RecordingModel(), Logger: rt.Logger,
		Config: rt.Config.Agent(), Tracer: tel.Tracer, Meter: tel.Meter})
	if err != nil {
		fatal(err)
	}
	h := &schedule.Handler{Service: agent, Logger: rt.Logger}
	flushFailed := func(err error) { rt.Logger.Warn("could not flush telemetry", "err", err) }
	// The raw payload goes to the handler as it came: an event that is
	// empty or not JSON is refused there, not failed (and retried) by the
	// runtime library's decoding.
	lambda.StartWithOptions(rawHandler(telemetry.Flushing(tel, flushFailed, gbaws.Wrap(rt, h.Invoke))),
		lambda.WithEnableSIGTERM(func() {
			rt.Close()
			_ = tel.Shutdown(context.Background())
		}))
}

// rawHandler is a function that takes and returns an invocation's payload
// as bytes: a lambda.Handler.
type rawHandler func(context.Context, []byte) ([]byte, error)

// Invoke implements lambda.Handler.
func (f rawHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

func fatal(err error) {
	slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("scheduler cannot start", "err", err)
	os.Exit(1)
}
