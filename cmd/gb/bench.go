package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/jobs/bench"
)

func benchCmd() *cobra.Command {
	var o bench.Options
	var verbose bool
	var cpuProfile string
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure agent steps, pickups, spawns and message wakes on DATABASE_URL beside River and LISTEN/NOTIFY",
		Long: `Measure the agent on DATABASE_URL and print one table: each figure beside a
baseline measured in the same run, and their ratio. Agent steps (a scripted
model with no latency that searches once a step) stand beside bare River jobs
that chain themselves the way steps do; their CPU (this process, and Postgres
when it runs on this machine) and round trips per step beside a River hop's;
pickups, spawns and resumes beside River's; a message wake beside a bare
LISTEN/NOTIFY. --trees adds a scale run of that many trees (a root and 3
sub-agents) whose model calls each take --model-latency.

The bench applies the schema first, uses River queues, users and a dataset of
its own, and deletes them when it ends, so it may run beside live workers.`,
		Example: `  gb bench
  gb bench --runs 50 --steps 20 --verbose
  gb bench --trees 1000 --model-latency 1s --max-workers 1000 --pool 25`,
		Args: args(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			workers, size, err := config.Sizes(os.Getenv)
			if err != nil {
				return usageErrorf("%w", err)
			}
			// Without flags, the bench's worker is sized as a live one.
			if !cmd.Flags().Changed("max-workers") {
				o.MaxWorkers = workers
			}
			if !cmd.Flags().Changed("pool") {
				o.Pool = size
			}
			if o.MaxWorkers < 1 || o.Pool < 2 {
				return usageErrorf("--max-workers must be at least 1 and --pool at least 2 (got %d and %d)", o.MaxWorkers, o.Pool)
			}
			if err := o.Validate(); err != nil {
				return usageErrorf("%w; see gb bench --help", err)
			}
			cfg, err := config.FromEnv(os.Getenv)
			if err != nil {
				return err
			}
			o.StepTimeout = cfg.StepTimeout
			pool, err := openDB(cmd.Context())
			if err != nil {
				return err
			}
			o.URL = os.Getenv("DATABASE_URL")
			_, err = db.Migrate(cmd.Context(), pool, slog.New(slog.DiscardHandler))
			pool.Close()
			if err != nil {
				return err
			}
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			o.Progress = func(s string) { fmt.Fprintf(cmd.ErrOrStderr(), "gb bench: %s\n", printable(s)) }
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			r, err := bench.Run(cmd.Context(), o)
			if perr := stop(); err == nil && perr != nil {
				return perr
			}
			if err != nil {
				return err
			}
			return r.Print(cmd.OutOrStdout(), verbose)
		},
	}
	f := c.Flags()
	f.IntVar(&o.Runs, "runs", bench.RunsDefault, "research runs measured at once")
	f.IntVar(&o.Steps, "steps", bench.StepsDefault, "steps of each run (2 to 40)")
	f.IntVar(&o.Samples, "samples", bench.SamplesDefault, "messages and River inserts timed; a tenth of it is the trees timing spawns")
	f.IntVar(&o.Trees, "trees", 0, "trees of the scale run (0 skips it)")
	f.DurationVar(&o.ModelLatency, "model-latency", time.Second, "latency of each model call in the scale run")
	f.IntVar(&o.MaxWorkers, "max-workers", 0, fmt.Sprintf("step jobs run at once (default %s, else %d)",
		config.EnvMaxWorkers, config.MaxWorkersDefault))
	f.Int32Var(&o.Pool, "pool", 0, fmt.Sprintf("connections of the bench's pool (default %s, else %d)",
		config.EnvDBPool, config.DBPoolDefault))
	f.DurationVar(&o.Slice, "slice", 0, "how long a job makes its run's steps in a row (default 30s; -1ns: a job per step)")
	f.IntVar(&o.PostgresPID, "pgpid", 0, "PID of the local postmaster (default: found from a backend's parent)")
	f.BoolVar(&verbose, "verbose", false, "also print the statements of each phase, with whose they are")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write this process's CPU profile of the whole bench to this file (go tool pprof reads it)")
	c.AddCommand(benchProviderCmd(), benchOutageCmd())
	return c
}

// startCPUProfile starts a CPU profile written to path, when path is not
// empty, and returns what stops it and closes the file.
func startCPUProfile(path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("error creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("error starting the CPU profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("error writing the CPU profile: %w", err)
		}
		return nil
	}, nil
}
