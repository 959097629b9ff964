// Command api is the API Lambda: API Gateway HTTP API events (payload 2.0)
// served by the REST API of infra/httpapi. It inserts researches with an
// insert-only River client (it never works jobs and never listens), kicks
// the worker after each new research, and works behind RDS Proxy.
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/gbresearch/gb/functions/api/apigw"
	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/telemetry"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/messenger"
)

func main() {
	ctx := context.Background()
	// One request at a time per execution environment: a small pool.
	rt, err := gbaws.Setup(ctx, gbaws.SetupParams{AppName: "gb-api", MaxConns: 2})
	if err != nil {
		fatal(err)
	}
	// Traces and metrics from the OTEL_* variables (off when unset),
	// flushed after each invocation.
	tel, err := telemetry.Setup(ctx, telemetry.Options{Service: "gb-api"})
	if err != nil {
		fatal(err)
	}
	// The API sends the owner's messages but never waits for one: its
	// messenger has no listener.
	msgr := messenger.NewPostgres(rt.Pool, nil, messenger.PostgresConfig{})
	// Its webhook sender only checks the webhook URLs of requests.
	agent, err := jobs.New(jobs.Deps{Pool: rt.Pool, Model: rt.RecordingModel(), Messenger: msgr, Logger: rt.Logger,
		Config: rt.Config.Agent(), Webhooks: rt.Config.NewWebhookSender(rt.Logger), Tracer: tel.Tracer, Meter: tel.Meter})
	if err != nil {
		fatal(err)
	}
	handler := httpapi.New(httpapi.Deps{Agent: agent, Logger: rt.Logger, Kick: rt.Kick(), Tracer: tel.Tracer, Meter: tel.Meter})
	flushFailed := func(err error) { rt.Logger.Warn("could not flush telemetry", "err", err) }
	lambda.StartHandlerFunc(telemetry.Flushing(tel, flushFailed, serve(rt, apigw.Handler(handler))),
		lambda.WithEnableSIGTERM(func() {
			rt.Close()
			_ = tel.Shutdown(context.Background())
		}))
}

// serve wraps the API's handler for one invocation: every log record of
// the invocation carries the Lambda and API Gateway request ids, and an
// invocation that may have written closes the pool's connections before
// returning. River's job insert calls nextval(), which pins an RDS Proxy
// session to its client connection for as long as that connection lives;
// closing it ends the pinning. Reads keep their connections.
func serve(rt *gbaws.Runtime, h func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		defer rt.Begin(ctx, ev.RequestContext.RequestID)()
		res, err := h(ctx, ev)
		if writes(ev.RequestContext.HTTP.Method) {
			n := rt.ReleaseConns(ctx)
			rt.Logger.DebugContext(ctx, "released database connections after a write", "closed", n)
		}
		return res, err
	}
}

// writes says whether a request of this method may write, and so may have
// inserted a River job.
func writes(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

func fatal(err error) {
	slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("api cannot start", "err", err)
	os.Exit(1)
}
