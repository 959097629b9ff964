package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/gbresearch/gb/functions/worker/work"
	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/logs"
)

// setupMargin is kept between a set-up tried by an invocation and the
// invocation's deadline, to answer its error in time.
const setupMargin = 2 * time.Second

// starter holds the worker of an execution environment, built at cold
// start or, when the database could not be reached then, by the first
// invocation that reaches it. Lambda runs one invocation at a time per
// environment; the mutex is for the SIGTERM callback.
type starter struct {
	// build sets up the runtime and the worker.
	build func(context.Context) (*gbaws.Runtime, *work.Worker, error)

	mu     sync.Mutex
	rt     *gbaws.Runtime
	handle func(context.Context, work.Event) (work.Result, error)
	logger *slog.Logger // for the invocations before rt exists
}

// start builds the worker once.
func (s *starter) start(ctx context.Context) error {
	rt, w, err := s.build(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rt, s.handle = rt, gbaws.Wrap(rt, w.Handle)
	return nil
}

// Handle is one invocation: the worker's, once it is built. Until then
// each invocation tries to build it before its deadline; when the database
// still cannot be reached it logs a warning and fails with an error saying
// so, having done nothing: the next sweep (or kick) tries again.
func (s *starter) Handle(ctx context.Context, ev work.Event) (work.Result, error) {
	s.mu.Lock()
	handle := s.handle
	s.mu.Unlock()
	if handle != nil {
		return handle(ctx, ev)
	}
	sctx, cancel := setupContext(ctx)
	err := s.start(sctx)
	cancel()
	if err == nil {
		return s.Handle(ctx, ev)
	}
	res := work.Result{Source: cmp.Or(ev.Source, "unknown")}
	log := s.startupLogger().With(requestID(ctx))
	if databaseDown(err) {
		log.WarnContext(ctx, "database unreachable; this invocation did no work, the next sweep tries again", "err", err)
		return res, fmt.Errorf("the worker cannot reach the database, so this invocation did no work; the next sweep or kick tries again: %w", err)
	}
	log.ErrorContext(ctx, "worker cannot start", "err", err)
	return res, fmt.Errorf("the worker cannot start: %w", err)
}

// setupContext bounds a set-up tried by an invocation: setupMargin before
// the invocation's deadline.
func setupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline.Add(-setupMargin))
}

// close closes the runtime, if there is one (SIGTERM).
func (s *starter) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rt != nil {
		s.rt.Close()
	}
}

func (s *starter) startupLogger() *slog.Logger {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logger == nil {
		s.logger = startupLogger()
	}
	return s.logger
}

// startupLogger is a Lambda logger for the records logged before the
// runtime (and its logger) exists, at the level and in the format the
// runtime's would have. It has no logs.Throttle: it logs once per
// invocation at most, and a throttle with no pool to probe would report
// the outage over between two sweeps.
func startupLogger() *slog.Logger {
	gbLevel := slog.LevelInfo
	if cfg, err := config.FromEnv(os.Getenv); err == nil {
		gbLevel = cfg.LogLevel
	}
	level, _ := gbaws.LogLevel(os.Getenv, gbLevel)
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: logs.InertAttrs(lambdacontext.ReplaceAttr)}
	if strings.EqualFold(os.Getenv(gbaws.EnvLambdaLogFormat), "JSON") {
		return slog.New(slog.NewJSONHandler(os.Stdout, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stdout, opts))
}

// requestID is the invocation's request id, for a startupLogger record.
func requestID(ctx context.Context) slog.Attr {
	lc, _ := lambdacontext.FromContext(ctx)
	if lc == nil {
		return slog.Attr{}
	}
	return slog.String(gbaws.RequestIDKey, lc.AwsRequestID)
}
