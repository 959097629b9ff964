// Command worker is the worker Lambda: each invocation (a kick from the API,
// a kick from another worker, or the every-minute sweep) maintains River's
// queue, works step jobs until none is left or its deadline is near, and
// stops cleanly (see functions/worker/work).
//
// When the database cannot be reached at cold start, the execution
// environment does not exit: each invocation tries to set up again, and
// until one succeeds answers a clear error within its deadline (see
// starter).
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/gbresearch/gb/functions/worker/work"
	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/telemetry"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/messenger"
)

// coldStartTimeout bounds the set-up at cold start, well within the 10 s
// Lambda allows an init phase: a database that does not answer by then is
// tried again by the first invocation.
const coldStartTimeout = 5 * time.Second

func main() {
	// Telemetry needs no database: it is set up once, before the runtime,
	// and flushed after each invocation, before Lambda freezes the process.
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{Service: "gb-worker"})
	if err != nil {
		fatal(err)
	}
	s := &starter{build: func(ctx context.Context) (*gbaws.Runtime, *work.Worker, error) { return build(ctx, tel) }}
	ctx, cancel := context.WithTimeout(context.Background(), coldStartTimeout)
	err = s.start(ctx)
	cancel()
	switch {
	case err == nil:
	case databaseDown(err):
		s.startupLogger().Warn("database unreachable at cold start; each invocation tries again", "err", err)
	default:
		fatal(err)
	}
	lambda.StartHandlerFunc(telemetry.Flushing(tel, flushFailed, s.Handle), lambda.WithEnableSIGTERM(func() {
		s.close()
		shutdown(tel)
	}))
}

// build sets up the runtime (settings, secrets, the pool, which reaches
// the database) and the worker. Its errors after the runtime exists close
// the runtime.
func build(ctx context.Context, tel *telemetry.Telemetry) (*gbaws.Runtime, *work.Worker, error) {
	// A direct connection (no proxy) with GB_DB_POOL connections; the pool
	// is closed between invocations.
	rt, err := gbaws.Setup(ctx, gbaws.SetupParams{AppName: "gb-worker", Working: true, ModelKey: true})
	if err != nil {
		return nil, nil, err
	}
	w, err := newWorker(rt, tel)
	if err != nil {
		rt.Close()
		return nil, nil, err
	}
	return rt, w, nil
}

// newWorker builds the agent and the worker on a runtime, traced and
// measured by tel.
func newWorker(rt *gbaws.Runtime, tel *telemetry.Telemetry) (*work.Worker, error) {
	model, err := rt.Model()
	if err != nil {
		return nil, err
	}
	models, err := rt.Config.NewModels(rt.Logger)
	if err != nil {
		return nil, err
	}
	searcher, fetcher, err := rt.Config.NewWeb(rt.Logger)
	if err != nil {
		return nil, err
	}
	cfg := rt.Config.Agent() // MaxWorkers is GB_MAX_WORKERS
	// The message listener's one LISTEN connection lives only during an
	// invocation: work.Worker starts it before River and stops it after.
	listener := messenger.NewListener(rt.Pool, rt.Logger)
	msgr := messenger.NewPostgres(rt.Pool, listener, messenger.PostgresConfig{})
	agent, err := jobs.New(jobs.Deps{Pool: rt.Pool, Model: model, Messenger: msgr, Logger: rt.Logger, Config: cfg,
		Search: searcher, Fetch: fetcher, Webhooks: rt.Config.NewWebhookSender(rt.Logger), Types: rt.Config.Types,
		Models: models, Work: true, Tracer: tel.Tracer, Meter: tel.Meter})
	if err != nil {
		return nil, err
	}
	return work.New(work.Deps{Service: agent, Pool: rt.Pool, Logger: rt.Logger, Kick: rt.Kick(),
		Listener: listener, Config: work.Config{StepTimeout: cfg.StepTimeout}})
}

// databaseDown reports whether a set-up failed because the database could
// not be reached (in time), which a later invocation may find otherwise.
func databaseDown(err error) bool {
	return jobs.DatabaseUnavailable(err) || errors.Is(err, context.DeadlineExceeded)
}

// flushFailed logs an invocation's failed telemetry flush.
func flushFailed(err error) {
	slog.New(slog.NewJSONHandler(os.Stderr, nil)).Warn("could not flush telemetry", "err", err)
}

// shutdown flushes and stops the telemetry when Lambda shuts the execution
// environment down.
func shutdown(tel *telemetry.Telemetry) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		flushFailed(err)
	}
}

func fatal(err error) {
	slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("worker cannot start", "err", err)
	os.Exit(1)
}
