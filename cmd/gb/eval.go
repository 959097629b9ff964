package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/messenger"
)

// evalParallelMax bounds --parallel: each slot is a user of its own.
const evalParallelMax = 32

// evalOptions are the flags of gb eval.
type evalOptions struct {
	set      string
	parallel int
	timeout  time.Duration
	a, b     evalConfig
	aSet     []string
	aFile    string
	bSet     []string
	bFile    string
	vs       bool
	vsModel  string
	// forkStep, when set (--vs-fork-step), makes B research each question
	// as a fork of A's research of it, replaying A's root up to that step.
	forkStep *int
	log      string
	progress io.Writer
}

// evalReport is the whole result of gb eval, as -o json writes it.
type evalReport struct {
	Set      string                  `json:"set"`
	Configs  []*evalConfig           `json:"configs"`
	Results  map[string][]evalResult `json:"results"`
	Summary  map[string]evalSummary  `json:"summary"`
	Started  time.Time               `json:"started_at"`
	Duration float64                 `json:"duration_seconds"`
}

func evalCmd() *cobra.Command {
	var o evalOptions
	cmd := &cobra.Command{
		Use:   "eval [SET.yaml|SET.jsonl]",
		Short: "Run a question set against the configured model and settings and score the reports",
		Long: `Runs every question of a set (YAML or JSONL: question, dataset or web, the
facts a good answer states as regular expressions, optionally the sources it
should cite, and unanswerable: true for a question the dataset cannot answer,
whose right answer says so) as a research on DATABASE_URL, with a worker and
the API started in this process under the configured model, provider and
settings, --parallel at a time. It prints one table: per question the facts
found and missed, whether it answered or rightly said the dataset does not
cover it, the expected sources cited, the citation check's verdicts, tokens
(cached apart), cost, wall time, agents and steps; then totals and medians.

--vs runs a second configuration on the same questions in the same run (its
settings as --vs-set KEY=VALUE, --vs-file FILE of such lines, --vs-model, and
--vs-prompts DIR of prompt files) and prints both side by side with their
differences. With --vs-fork-step N, B does not research a question from the
start: it forks A's research of it at step N of its root (gb research fork),
which replays those steps from A's record at no cost, so B pays only for what
its change makes differ. Without a file it runs the shipped godoc set (the Go toolchain's
package documentation, loaded as the godoc dataset when missing). See
docs/eval.md.`,
		Example: `  gb eval
  gb eval --parallel 4 -o json > godoc.json
  gb eval my-questions.yaml --set GB_MODEL=gpt-4o-mini
  gb eval --vs --vs-model gpt-4.1-mini
  gb eval --vs --vs-prompts ./prompts-v2 --vs-set GB_REASONING_EFFORT=low
  gb eval --vs --vs-model gpt-4.1-mini --vs-fork-step 2`,
		Args: args(0, 1, "at most one question set file"),
	}
	out := addOutput(cmd)
	cmd.RunE = func(cmd *cobra.Command, a []string) error {
		asJSON, err := out.isJSON()
		if err != nil {
			return err
		}
		if len(a) == 1 {
			o.set = a[0]
		}
		o.progress = cmd.ErrOrStderr()
		rep, set, err := runEval(cmd.Context(), &o)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), rep)
		}
		return printEvalReport(cmd.OutOrStdout(), set, rep)
	}
	f := cmd.Flags()
	f.IntVar(&o.parallel, "parallel", 2, "questions researched at once by each configuration")
	f.DurationVar(&o.timeout, "timeout", 15*time.Minute, "longest a question's research may take before it is cancelled")
	f.StringArrayVar(&o.aSet, "set", nil, "a setting of the configuration measured, KEY=VALUE as in the environment (repeatable)")
	f.StringVar(&o.aFile, "settings", "", "a file of KEY=VALUE settings for the configuration measured")
	f.StringVar(&o.a.Prompts, "prompts", "", "a directory of prompt files replacing the built-in ones (research.md, knowledge.md, …)")
	f.BoolVar(&o.vs, "vs", false, "also run a second configuration (B) and compare it with the first (A)")
	f.StringVar(&o.vsModel, "vs-model", "", "B's model (GB_MODEL)")
	f.StringArrayVar(&o.bSet, "vs-set", nil, "a setting of B, KEY=VALUE (repeatable)")
	f.StringVar(&o.bFile, "vs-file", "", "a file of KEY=VALUE settings for B")
	f.StringVar(&o.b.Prompts, "vs-prompts", "", "B's directory of prompt files")
	forkStep := f.Int("vs-fork-step", 0, "B forks A's research of each question at this step of its root, replaying it at no cost (0 replays none)")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("vs-fork-step") {
			if *forkStep < 0 {
				return usageErrorf("--vs-fork-step must be 0 or more (got %d)", *forkStep)
			}
			o.forkStep = forkStep
		}
		return nil
	}
	f.StringVar(&o.log, "log", "", "file for the workers' log (default: a temporary file)")
	return cmd
}

// runEval runs the set under one or two configurations.
func runEval(ctx context.Context, o *evalOptions) (*evalReport, *evalSet, error) {
	if o.parallel < 1 || o.parallel > evalParallelMax {
		return nil, nil, usageErrorf("--parallel must be 1 to %d (got %d)", evalParallelMax, o.parallel)
	}
	if !o.vs && (o.vsModel != "" || len(o.bSet) > 0 || o.bFile != "" || o.b.Prompts != "" || o.forkStep != nil) {
		return nil, nil, usageErrorf("--vs-model, --vs-set, --vs-file, --vs-prompts and --vs-fork-step need --vs")
	}
	set, err := loadEvalSet(o.set)
	if err != nil {
		return nil, nil, err
	}
	o.a.Label, o.a.Set = "A", map[string]string{}
	if err := parseSettings(o.a.Set, o.aSet, o.aFile); err != nil {
		return nil, nil, err
	}
	cfgs := []*evalConfig{&o.a}
	if o.vs {
		o.b.Label, o.b.Set = "B", map[string]string{}
		if o.vsModel != "" {
			o.b.Set["GB_MODEL"] = o.vsModel
		}
		if err := parseSettings(o.b.Set, o.bSet, o.bFile); err != nil {
			return nil, nil, err
		}
		cfgs = append(cfgs, &o.b)
	}
	logger, closeLog, err := evalLogger(o.log, o.progress)
	if err != nil {
		return nil, nil, err
	}
	defer closeLog()
	pool, err := openDB(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer pool.Close()
	if _, err := db.Migrate(ctx, pool, logger); err != nil {
		return nil, nil, err
	}
	if needsGoDocs(set) {
		if err := loadGoDocs(ctx, &stack{pool: pool}, o.progress); err != nil {
			return nil, nil, err
		}
	}
	listener := messenger.NewListener(pool, logger)
	if err := listener.Start(ctx); err != nil {
		return nil, nil, err
	}
	defer func() { _ = listener.Stop(context.WithoutCancel(ctx)) }()
	rep := &evalReport{Set: set.Name, Configs: cfgs, Results: map[string][]evalResult{}, Summary: map[string]evalSummary{},
		Started: time.Now()}
	stacks := make([]*evalStack, len(cfgs))
	for i, c := range cfgs {
		// Each configuration works a queue of its own; the first takes part
		// in the database's upkeep.
		s, err := startEvalStack(ctx, pool, listener, c, fmt.Sprintf("gb_eval_%s_%d", strings.ToLower(c.Label), os.Getpid()), i > 0, logger)
		if err != nil {
			return nil, nil, err
		}
		defer s.stop()
		stacks[i] = s
	}
	var mu sync.Mutex
	progress := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(o.progress, "gb eval: %s\n", printable(s))
	}
	progress(fmt.Sprintf("%d questions of %s, %d at a time per configuration", len(set.Questions), set.Name, o.parallel))
	results := make([][]evalResult, len(stacks))
	errs := make([]error, len(stacks))
	if o.forkStep != nil {
		// B forks A's researches: A first, then B from what A recorded.
		o.b.ForkStep = o.forkStep
		results[0], errs[0] = runConfig(ctx, pool, stacks[0], set, o.parallel, o.timeout, progress, nil)
		if errs[0] == nil {
			results[1], errs[1] = runConfig(ctx, pool, stacks[1], set, o.parallel, o.timeout, progress,
				&evalForks{step: *o.forkStep, of: results[0], owner: "A"})
		}
	} else {
		var wg sync.WaitGroup
		for i, s := range stacks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = runConfig(ctx, pool, s, set, o.parallel, o.timeout, progress, nil)
			}()
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	for i, c := range cfgs {
		rep.Results[c.Label] = results[i]
		rep.Summary[c.Label] = summarize(results[i])
	}
	rep.Duration = time.Since(rep.Started).Seconds()
	return rep, set, nil
}

// needsGoDocs says whether a question uses the godoc dataset (the
// default), which gb eval loads when missing.
func needsGoDocs(set *evalSet) bool {
	for _, q := range set.Questions {
		if !q.Web && (q.Dataset == "" || q.Dataset == jobs.DefaultDataset) {
			return true
		}
	}
	return false
}

// evalLogger logs the workers to path, or to a temporary file.
func evalLogger(path string, progress io.Writer) (*slog.Logger, func(), error) {
	var f *os.File
	var err error
	if path == "" {
		f, err = os.CreateTemp("", "gb-eval-*.log")
	} else {
		f, err = os.Create(path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("error creating the log file: %w", err)
	}
	fmt.Fprintf(progress, "gb eval: workers log to %s\n", f.Name())
	return newLogger(f), func() { _ = f.Close() }, nil
}

// printEvalReport prints the table of one configuration, or both side by
// side.
func printEvalReport(w io.Writer, set *evalSet, rep *evalReport) error {
	if len(rep.Configs) == 1 {
		return printEval(w, rep.Configs[0], set, rep.Results["A"])
	}
	if len(rep.Configs) != 2 {
		return errors.New("gb eval compares at most two configurations")
	}
	return printEvalVs(w, set, rep.Configs[0], rep.Configs[1], rep.Results["A"], rep.Results["B"])
}
