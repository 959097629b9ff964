// Command api is the API Lambda: API Gateway HTTP API events (payload 2.0)
// served by the REST API of infra/httpapi. It inserts researches with an
// insert-only River client (it never works jobs and never listens), kicks
// the worker after each new research, and works behind RDS Proxy.
//
// The same function answers its function URL (InvokeMode RESPONSE_STREAM)
// with streamed responses (lambdaurl), so the event stream of a research
// is live there; the HTTP API buffers every answer, so there the stream
// route answers 501 and clients follow with the long poll
// (docs/serverless.md).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdaurl"

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
	deps := httpapi.Deps{Service: agent, Logger: rt.Logger, Kick: rt.Kick(), Tracer: tel.Tracer, Meter: tel.Meter}
	streamed := httpapi.New(deps)
	deps.NoStream = noStream
	buffered := httpapi.New(deps)
	flushFailed := func(err error) { rt.Logger.Warn("could not flush telemetry", "err", err) }
	lambda.StartHandlerFunc(telemetry.Flushing(tel, flushFailed,
		route(serve(rt, apigw.Handler(buffered)), serveURL(rt, streamed))),
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

// noStream is why the HTTP API's answers cannot be a stream: the stream
// route says so with a 501 there.
const noStream = "API Gateway's HTTP API buffers every answer, so the event stream is not served here; " +
	"open it at the stack's StreamUrl (the API function's URL, which streams), or follow with the long poll " +
	"(GET /v1/gb/research/{id}/events?after=SEQ&wait=25)"

// route sends each invocation to the handler of its source: the function
// URL's requests (their domain is the URL's, *.lambda-url.REGION.on.aws)
// to url, API Gateway's to api.
func route(api func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error),
	url func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error),
) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var probe struct {
			RequestContext struct {
				DomainName string `json:"domainName"`
			} `json:"requestContext"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, fmt.Errorf("error decoding the invocation's event: %w", err)
		}
		if strings.Contains(probe.RequestContext.DomainName, ".lambda-url.") {
			var ev events.LambdaFunctionURLRequest
			if err := json.Unmarshal(raw, &ev); err != nil {
				return nil, fmt.Errorf("error decoding a function URL request: %w", err)
			}
			return url(ctx, &ev)
		}
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("error decoding an HTTP API request: %w", err)
		}
		return api(ctx, ev)
	}
}

// serveURL serves the function URL's requests with streamed answers
// (lambdaurl): the answer's body goes out as the handler writes it, after
// the invocation's handler has returned, so the invocation's log ids and
// a write's closing of connections are put around the request itself.
func serveURL(rt *gbaws.Runtime, h http.Handler) func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
	return lambdaurl.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var requestID string
		if ev, ok := lambdaurl.RequestFromContext(r.Context()); ok {
			requestID = ev.RequestContext.RequestID
		}
		defer rt.Begin(r.Context(), requestID)()
		h.ServeHTTP(w, r)
		if writes(r.Method) {
			n := rt.ReleaseConns(r.Context())
			rt.Logger.DebugContext(r.Context(), "released database connections after a write", "closed", n)
		}
	}))
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
