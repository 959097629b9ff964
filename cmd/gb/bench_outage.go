package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/fakeprovider"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// outageBench is what gb bench outage runs.
type outageBench struct {
	mode          string
	research      time.Duration
	steps         int
	trees         int
	treesOutage   time.Duration
	rpm           int
	backoffCap    time.Duration
	workers       int
	stepTimeout   time.Duration
	researchAfter int
}

func benchOutageCmd() *cobra.Command {
	var o outageBench
	c := &cobra.Command{
		Use:   "outage",
		Short: "Run researches through an outage of a fake provider and print what reached it while it was down",
		Long: `Run on DATABASE_URL, against the project's OpenAI-compatible fake provider, with two
worker agents sharing the database:

  - a research of --steps steps whose provider goes down for --research halfway
    (503s, 529 overloaded, dropped connections or hangs: --mode): how it ended, the
    requests the provider received while down and the breaker's probes among them,
    the run as the API showed it during the outage, and whether gb's ledger equals
    the provider's bill;
  - --trees trees of a root and three sub-agents against --rpm requests a minute,
    whose provider goes down for --trees-outage after a third of their calls: runs
    that succeeded, the 429s after the recovery, the calls billed in the minute
    after it as a share of the limit, and the ledger against the bill.

These take minutes (the outages are real time): they are benchmarks, not tests.`,
		Example: `  gb bench outage --research 2m --trees 0
  gb bench outage --research 0 --trees 30 --trees-outage 5m --rpm 120
  gb bench outage --research 20m --trees 0 --mode drop`,
		Args: args(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode := fakeprovider.OutageMode(o.mode)
			if err := (&fakeprovider.Outage{}).Start(mode, time.Now(), 0); err != nil {
				return usageErrorf("--mode: %w", err)
			}
			pool, err := openDB(cmd.Context())
			if err != nil {
				return err
			}
			defer pool.Close()
			if _, err := db.Migrate(cmd.Context(), pool, slog.New(slog.DiscardHandler)); err != nil {
				return err
			}
			env := providerbench.EnvOptions{Pool: pool, Workers: o.workers,
				Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError})),
				Agent:  jobs.Config{StepTimeout: o.stepTimeout, Outage: jobs.OutageConfig{BackoffCap: o.backoffCap}}}
			w := cmd.OutOrStdout()
			if o.research > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "gb bench outage: a %d-step research through %s of %s\n", o.steps, o.research, mode)
				r, err := providerbench.OutageResearch(cmd.Context(), providerbench.OutageResearchOptions{EnvOptions: env,
					Steps: o.steps, Outage: providerbench.Outage{Mode: mode, For: o.research, AfterCalls: o.researchAfter}})
				if err != nil {
					return err
				}
				printOutageResearch(w, r)
			}
			if o.trees > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "gb bench outage: %d trees at %d RPM through %s of %s\n", o.trees, o.rpm, o.treesOutage, mode)
				r, err := providerbench.OutageTrees(cmd.Context(), providerbench.OutageTreesOptions{
					RateOptions: providerbench.RateOptions{EnvOptions: env, Trees: o.trees, RPM: o.rpm},
					Outage:      providerbench.Outage{Mode: mode, For: o.treesOutage}})
				if err != nil {
					return err
				}
				printOutageTrees(w, r)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.mode, "mode", string(fakeprovider.OutageUnavailable), "how the provider fails while down: 503, 529, drop or hang")
	f.DurationVar(&o.research, "research", 2*time.Minute, "outage the research meets (0 skips it)")
	f.IntVar(&o.steps, "steps", 12, "steps of the research")
	f.IntVar(&o.researchAfter, "research-after", 0, "calls billed before the research's outage (default half its steps)")
	f.IntVar(&o.trees, "trees", 30, "trees of 4 agents started at once (0 skips them)")
	f.DurationVar(&o.treesOutage, "trees-outage", 5*time.Minute, "outage the trees meet")
	f.IntVar(&o.rpm, "rpm", 120, "the provider's requests per minute, for the trees")
	f.IntVar(&o.workers, "workers", 2, "worker agents on the database")
	f.DurationVar(&o.stepTimeout, "step-timeout", 30*time.Second, "GB_STEP_TIMEOUT of the workers (how long a hung call holds its step)")
	f.DurationVar(&o.backoffCap, "backoff-cap", 0, "longest backoff between tries (default 60s)")
	return c
}

func printOutageResearch(w io.Writer, r providerbench.OutageResearchResult) {
	fmt.Fprintf(w, "research: %s after %d steps in %s (report %d characters)%s\n", r.Status, r.Steps,
		r.Elapsed.Round(time.Second), len(r.Report), printable(errorNote(r.Error)))
	fmt.Fprintf(w, "  %s\n", r.Outage)
	fmt.Fprintf(w, "  the run during the outage (API): %s\n", printable(r.Outage.Sample))
	fmt.Fprintf(w, "  provider: %d requests, %d billed, $%.6f; ledger: %d billed (%d at an estimate, %d of them unbilled), $%.6f, %d mismatches\n",
		r.Provider.Requests, r.Provider.Billed, r.Provider.CostUSD, r.Ledger.Billed, r.Ledger.Estimated,
		r.Ledger.EstimatedUnbilled, r.Ledger.CostUSD, len(r.Ledger.Mismatches))
}

func printOutageTrees(w io.Writer, r providerbench.OutageTreesResult) {
	fmt.Fprintf(w, "trees: %d of %d runs succeeded in %s%s\n", r.Succeeded, r.Runs, r.Elapsed.Round(time.Second),
		errorNote(fmt.Sprint(r.Errors)))
	fmt.Fprintf(w, "  %s\n", r.Outage)
	fmt.Fprintf(w, "  the minute after the outage: %.0f%% of the RPM limit billed; all run: %d requests, %d refused (%.1f%%)\n",
		100*r.MinuteThroughput, r.Provider.Requests, r.Refused, 100*r.Share)
	fmt.Fprintf(w, "  the last run during the outage (API): %s\n", printable(r.Outage.Sample))
	fmt.Fprintf(w, "  provider: %d billed, $%.6f; ledger: %d billed, $%.6f, %d mismatches\n",
		r.Provider.Billed, r.Provider.CostUSD, r.Ledger.Billed, r.Ledger.CostUSD, len(r.Ledger.Mismatches))
}

func errorNote(s string) string {
	if s == "" || s == "[]" {
		return ""
	}
	return ": " + s
}
