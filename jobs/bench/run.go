package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// Options are what Run measures, and on what.
type Options struct {
	// URL is the database (DATABASE_URL), already migrated.
	URL string
	// Runs research runs of Steps steps each are measured at once, beside
	// as many River chains of as many hops.
	Runs, Steps int
	// Samples is how many messages measure a wake, and how many River
	// inserts measure insert-to-start; a tenth of it is the number of
	// trees that measure a spawn and a resume.
	Samples int
	// Trees, when not 0, adds the scale run: that many trees of TreeModel
	// at once, each model call taking ModelLatency.
	Trees        int
	ModelLatency time.Duration
	// MaxWorkers is how many step jobs (and River jobs) run at once.
	MaxWorkers int
	// Pool is the size of the bench's pool.
	Pool int32
	// StepTimeout is the agents' jobs.Config.StepTimeout (GB_STEP_TIMEOUT;
	// jobs' default when 0).
	StepTimeout time.Duration
	// Slice is the agents' jobs.Config.Slice: how long a job makes its
	// run's steps in a row (jobs' default when 0; negative: every step
	// a job of its own).
	Slice time.Duration
	// PostgresPID names the postmaster of a local cluster; 0 finds it.
	PostgresPID int
	// Wake measures the message wake (MeasureWake when nil).
	Wake WakeFunc
	// Logger receives the logs of the agents and River clients
	// (slog.Default when nil).
	Logger *slog.Logger
	// Progress, when set, is told what is being measured.
	Progress func(string)
}

// Defaults of Options.
const (
	RunsDefault    = 8
	StepsDefault   = 20
	SamplesDefault = 200
)

func (o Options) withDefaults() Options {
	if o.Runs == 0 {
		o.Runs = RunsDefault
	}
	if o.Steps == 0 {
		o.Steps = StepsDefault
	}
	if o.Samples == 0 {
		o.Samples = SamplesDefault
	}
	if o.MaxWorkers == 0 {
		o.MaxWorkers = jobs.MaxWorkersDefault
	}
	if o.Wake == nil {
		o.Wake = MeasureWake
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return o
}

// Validate says what is wrong with the sizes of the options, naming the
// option.
func (o Options) Validate() error {
	switch {
	case o.Runs < 1:
		return errors.New("runs must be at least 1")
	case o.Steps < 2 || o.Steps > jobs.MaxMaxSteps:
		return fmt.Errorf("steps must be 2 to %d (a run's last step writes its report)", jobs.MaxMaxSteps)
	case o.Samples < 1:
		return errors.New("samples must be at least 1")
	case o.Trees < 0 || o.ModelLatency < 0 || o.StepTimeout < 0:
		return errors.New("trees, model latency and step timeout must not be negative")
	case o.MaxWorkers < 1 || o.Pool < 0:
		return errors.New("max workers must be at least 1, and the pool not negative")
	}
	return nil
}

// spawnTrees is how many trees measure a spawn and a resume.
func (o Options) spawnTrees() int { return max(2, o.Samples/10) }

// usersNeeded is how many users let every batch start at once: each has at
// most jobs.MaxWorkingPerUser roots working.
func (o Options) usersNeeded() int {
	per := jobs.MaxWorkingPerUser
	return max((o.Runs+per-1)/per, o.spawnTrees(), (o.Trees+per-1)/per)
}

// Run measures everything on o.URL and returns the table. It deletes what
// it created before it returns, also when it fails.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	if o.URL == "" {
		return nil, errors.New("no database URL")
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	e, err := newEnv(ctx, o)
	if err != nil {
		return nil, err
	}
	defer e.cleanup()
	r := &Report{Title: e.title()}
	inbox, err := e.steps(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := e.spawn(ctx, r); err != nil {
		return nil, err
	}
	if err := e.wake(ctx, r, inbox); err != nil {
		return nil, err
	}
	if o.Trees > 0 {
		if err := e.scale(ctx, r); err != nil {
			return nil, err
		}
	}
	r.Notes = append(r.Notes, e.notes()...)
	return r, nil
}

// title says what was run, on what.
func (e *env) title() string {
	where := "the database"
	if u, err := url.Parse(e.o.URL); err == nil && u.Host != "" {
		where = u.Host + u.Path
	}
	pg := "Postgres CPU not measured (" + e.remote + ")"
	if e.cluster != nil {
		pg = fmt.Sprintf("Postgres CPU from /proc (postmaster %d)", e.cluster.PID)
	}
	slice := "steps in a row for up to " + cmp.Or(e.o.Slice, jobs.SliceDefault).String() + " a job"
	if e.o.Slice < 0 {
		slice = "a job per step"
	}
	return fmt.Sprintf("gb bench on %s: %d runs x %d steps, %d samples, %d max workers, pool %d, %s; %s",
		where, e.o.Runs, e.o.Steps, e.o.Samples, e.o.MaxWorkers, e.pool.Config().MaxConns, slice, pg)
}

// notes explain how the figures were measured.
func (e *env) notes() []string {
	return []string{
		"steps: a zero-latency scripted model searches once a step (a search that finds nothing) and writes its report on the last;",
		"  River: a worker inserts the next hop and completes its job in one transaction. CPU and round trips are per step or hop,",
		"  from the first insert to the last commit; round trips are counted by a pgx tracer on the bench's pool (a batch is one).",
		"pickup: a step's commit to the start of the next step, when that step started a job of its own (went through the queue);",
		"  next step in the same job: the same, when the job of the step went on with the next one.",
		"spawn and resume: trees of a root that spawns 3 sub-agents and waits, one tree at a time; the baseline is a River job",
		"  inserted alone, from the insert to its start.",
		"wake: from a send's commit until a receiver blocked on its inbox (the Postgres messenger) runs again, beside",
		"  a bare NOTIFY's commit until a LISTEN connection gets it; the two take turns, sample by sample.",
		"Postgres CPU is the whole cluster's, whatever else runs on it meanwhile.",
	}
}
