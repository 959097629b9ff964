// Command worker is the worker Lambda: each invocation (a kick from the API,
// a kick from another worker, or the every-minute sweep) maintains River's
// queue, works step jobs until none is left or its deadline is near, and
// stops cleanly (see functions/worker/work).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/gbresearch/gb/functions/worker/work"
	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/messenger"
)

func main() {
	ctx := context.Background()
	// A direct connection (no proxy) with GB_DB_POOL connections; the pool
	// is closed between invocations.
	rt, err := gbaws.Setup(ctx, gbaws.SetupParams{AppName: "gb-worker", Working: true, ModelKey: true})
	if err != nil {
		fatal(err)
	}
	model, err := rt.Model()
	if err != nil {
		fatal(err)
	}
	models, err := rt.Config.NewModels(rt.Logger)
	if err != nil {
		fatal(err)
	}
	searcher, fetcher, err := rt.Config.NewWeb(rt.Logger)
	if err != nil {
		fatal(err)
	}
	cfg := rt.Config.Agent() // MaxWorkers is GB_MAX_WORKERS
	// The message listener's one LISTEN connection lives only during an
	// invocation: work.Worker starts it before River and stops it after.
	listener := messenger.NewListener(rt.Pool, rt.Logger)
	msgr := messenger.NewPostgres(rt.Pool, listener, messenger.PostgresConfig{})
	agent, err := jobs.New(jobs.Deps{Pool: rt.Pool, Model: model, Messenger: msgr, Logger: rt.Logger, Config: cfg,
		Search: searcher, Fetch: fetcher, Types: rt.Config.Types, Models: models, Work: true})
	if err != nil {
		fatal(err)
	}
	w, err := work.New(work.Deps{Agent: agent, Pool: rt.Pool, Logger: rt.Logger, Kick: rt.Kick(),
		Listener: listener, Config: work.Config{StepTimeout: cfg.StepTimeout}})
	if err != nil {
		fatal(err)
	}
	lambda.StartHandlerFunc(gbaws.Wrap(rt, w.Handle), lambda.WithEnableSIGTERM(rt.Close))
}

func fatal(err error) {
	slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("worker cannot start", "err", err)
	os.Exit(1)
}
