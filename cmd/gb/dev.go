package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/logs"
	"github.com/gbresearch/gb/infra/telemetry"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/messenger"
)

// stack is a local API and worker in one process.
type stack struct {
	pool     *pgxpool.Pool
	listener *messenger.Listener
	agent    *jobs.Service
	api      http.Handler
	logger   *slog.Logger
	tel      *telemetry.Telemetry // OpenTelemetry from the OTEL_* variables; off when unset
}

// startStack migrates the database and starts a working agent.
// Message systems of --messenger.
const (
	messengerPostgres = "postgres"
	messengerMemory   = "memory"
)

func startStack(ctx context.Context, logger *slog.Logger, messages string) (*stack, error) {
	if messages != messengerPostgres && messages != messengerMemory {
		return nil, usageErrorf("--messenger must be %s or %s (got %q)", messengerPostgres, messengerMemory, messages)
	}
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	if cfg.DatabaseURL == "" {
		return nil, errors.New("DATABASE_URL is required locally; run: export DATABASE_URL=$(infra/pg.sh start)")
	}
	pool, err := openWorkingPool(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// An outage logged by newLogger's throttle ends as soon as the pool
	// can reach the database again.
	if th, ok := logger.Handler().(*logs.Throttle); ok {
		th.SetProbe(pool.Ping)
	}
	if _, err := db.Migrate(ctx, pool, logger); err != nil {
		pool.Close()
		return nil, err
	}
	model, err := cfg.NewModel(logger)
	if err != nil {
		pool.Close()
		return nil, err
	}
	listener := messenger.NewListener(pool, logger)
	if err := listener.Start(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	var msgr jobs.Messenger = messenger.NewPostgres(pool, listener, messenger.PostgresConfig{})
	if messages == messengerMemory {
		// One process only: API, worker and inboxes share its memory.
		msgr = messenger.Detach(messenger.NewChanMessenger())
	}
	fault, err := faultHook(os.Getenv(envFaultKill))
	if err != nil {
		_ = listener.Stop(ctx)
		pool.Close()
		return nil, err
	}
	models, err := cfg.NewModels(logger)
	if err != nil {
		_ = listener.Stop(ctx)
		pool.Close()
		return nil, err
	}
	searcher, fetcher, err := cfg.NewWeb(logger)
	if err != nil {
		_ = listener.Stop(ctx)
		pool.Close()
		return nil, err
	}
	tel, err := telemetry.Setup(ctx, telemetry.Options{Service: "gb"})
	if err != nil {
		_ = listener.Stop(ctx)
		pool.Close()
		return nil, err
	}
	// cfg.Agent() runs GB_MAX_WORKERS step jobs at once.
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: model, Messenger: msgr, Logger: logger, Config: cfg.Agent(),
		Fault: fault, Search: searcher, Fetch: fetcher, Webhooks: cfg.NewWebhookSender(logger), Types: cfg.Types,
		Models: models, Work: true, Tracer: tel.Tracer, Meter: tel.Meter})
	if err == nil {
		err = agent.Start(ctx)
	}
	if err != nil {
		_ = listener.Stop(ctx)
		_ = tel.Shutdown(ctx)
		pool.Close()
		return nil, err
	}
	return &stack{pool: pool, listener: listener, agent: agent, logger: logger, tel: tel,
		api: httpapi.New(httpapi.Deps{Service: agent, Logger: logger, Notifier: listener, Tracer: tel.Tracer, Meter: tel.Meter})}, nil
}

// openWorkingPool opens the pool of a process that works step jobs (gb
// dev, gb worker, gb demo): GB_DB_POOL connections, which the local API of
// gb dev shares.
func openWorkingPool(ctx context.Context, cfg config.Config) (*pgxpool.Pool, error) {
	return db.Open(ctx, db.PoolConfig{URL: cfg.DatabaseURL, MaxConns: cfg.DBPool})
}

// stop stops the worker, giving running steps a few seconds to commit.
func (s *stack) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.agent.Stop(ctx); err != nil {
		s.logger.Error("stopping worker", "err", err)
	}
	if err := s.listener.Stop(ctx); err != nil {
		s.logger.Error("stopping message listener", "err", err)
	}
	if err := s.tel.Shutdown(ctx); err != nil {
		s.logger.Error("flushing telemetry", "err", err)
	}
	s.pool.Close()
}

// serve serves the API on ln until ctx ends.
func (s *stack) serve(ctx context.Context, ln net.Listener) error {
	srv := httpapi.NewServer(s.api)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("error serving API: %w", err)
	}
	return nil
}

// newLogger logs text to w at GB_LOG_LEVEL. While the database is
// unreachable, its connection failures (River's and ours) are throttled: the
// first is logged, then one summary every 30s, then one record when the
// database is back (see logs.Throttle; startStack sets its probe).
func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if v := os.Getenv(config.EnvLogLevel); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	text := slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: logs.InertAttrs(nil)})
	return slog.New(logs.NewThrottle(text, logs.ThrottleOptions{}))
}

func devCmd() *cobra.Command {
	var addr string
	var riverUI bool
	var messages string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Migrate, then serve the API and run a worker in one process",
		Example: `  gb dev
  gb dev --addr 127.0.0.1:9090 --river-ui   # River UI on http://127.0.0.1:9090/riverui/
  gb dev --messenger memory                 # sibling messages in this process's memory (no transcript)`,
		Args: args(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), addr, riverUI, messages, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to serve the API on")
	cmd.Flags().StringVar(&messages, "messenger", messengerPostgres, "message system of the agents: postgres (the table and LISTEN/NOTIFY) or memory "+
		"(in this process only: messages are not stored, so there is no transcript, and a retried step may send twice)")
	cmd.Flags().BoolVar(&riverUI, "river-ui", false, "also serve River UI, the view of the job queue, at /riverui/ (loopback addresses only: it shows every user's jobs)")
	return cmd
}

func runDev(ctx context.Context, addr string, riverUI bool, messages string, out io.Writer) error {
	if riverUI {
		if err := checkLoopback(addr); err != nil {
			return err
		}
	}
	logger := newLogger(os.Stderr)
	s, err := startStack(ctx, logger, messages)
	if err != nil {
		return err
	}
	defer s.stop()
	if riverUI {
		if err := s.mountRiverUI(ctx); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", addr, err)
	}
	fmt.Fprintf(out, "API on http://%s (model: %s); worker running. Ctrl-C stops.\n", ln.Addr(), s.agent.ModelName())
	if riverUI {
		fmt.Fprintf(out, "River UI on http://%s%s\n", ln.Addr(), riverUIPrefix)
	}
	return s.serve(ctx, ln)
}

func workerCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "worker",
		Short:   "Run a worker only (steps of the queue; no API); waits for Postgres at start",
		Example: "  gb worker",
		Args:    args(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger := newLogger(os.Stderr)
			s, err := startWorkerStack(cmd.Context(), logger, newWaitLogger(os.Stderr))
			if err != nil {
				return err
			}
			defer s.stop()
			fmt.Fprintf(cmd.OutOrStdout(), "worker running (model: %s). Ctrl-C stops.\n", s.agent.ModelName())
			<-cmd.Context().Done()
			return nil
		},
	}
}
