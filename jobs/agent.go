package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	"go.opentelemetry.io/otel/metric"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// Defaults of Config.
const (
	StepTimeoutDefault   = 3 * time.Minute
	StepMaxAttempts      = 5
	FetchCooldownDefault = time.Millisecond
	FetchPollDefault     = 100 * time.Millisecond
	MaxWorkersDefault    = 1000
	// SliceDefault is how long a job makes consecutive steps of its run
	// before it hands the run over to a new step job.
	SliceDefault = 30 * time.Second
	// RescueMarginDefault is how long after a step job's longest life
	// (StepTimeout plus Slice) a job still marked running is taken for
	// the job of a worker that is gone and rescued (maintain.go).
	RescueMarginDefault = 10 * time.Second
	// MaintainIntervalDefault is how often a working process rescues the
	// jobs of dead workers and repairs runs with no way forward.
	MaintainIntervalDefault = time.Second
	// MaxReportCharsDefault caps a sub-agent's report in a wait result.
	MaxReportCharsDefault = 4000
)

// Config tunes the agent and its River client.
type Config struct {
	// StepTimeout bounds one step (model call, tools and commit).
	StepTimeout time.Duration
	// Slice is how long one step job makes consecutive steps of its run,
	// each its own transaction, before it hands the run over to a new step
	// job (SliceDefault); a step job lasts at most Slice plus StepTimeout.
	// A negative Slice makes every step a job of its own.
	Slice time.Duration
	// FetchCooldown is the least time between two job fetches; River's 100 ms
	// default would add that much to every step's pickup.
	FetchCooldown time.Duration
	// FetchPollInterval is how often to look for jobs without a notification.
	FetchPollInterval time.Duration
	// MaxWorkers is how many step jobs one process runs at once.
	MaxWorkers int
	// RescueStuckJobsAfter is when the maintenance pass rescues a job still
	// running, whatever its worker's liveness lock says (a worker that lost
	// its database); the jobs of a worker that holds no liveness lock are
	// rescued at once (liveness.go). It must exceed a step job's longest
	// life (StepTimeout plus Slice); by default it is that plus
	// RescueMarginDefault.
	RescueStuckJobsAfter time.Duration
	// MaxCostUSD and MaxTokens are the tree budgets given to a research that
	// does not ask for its own; 0 means no budget.
	MaxCostUSD float64
	MaxTokens  int64
	// MaxCompletionTokens caps the answer of each model call
	// (MaxCompletionTokensDefault); in a tree with a budget it is lowered
	// to what the budget has left.
	MaxCompletionTokens int
	// MaxSubagents, when set, lowers the sub-agents a tree may have below
	// MaxSubagentsPerTree for every user; 0 turns spawning off.
	MaxSubagents *int
	// MaxReportChars caps each sub-agent's report in its parent's
	// wait_subagents result (MaxReportCharsDefault); read_report pages
	// through the rest.
	MaxReportChars int
	// FetchCacheAge is how long a page an agent of a tree fetched is
	// reused by the tree's other agents (FetchCacheAgeDefault).
	FetchCacheAge time.Duration
	// MaintainInterval is how often a working process runs the
	// maintenance pass (MaintainIntervalDefault).
	MaintainInterval time.Duration
	// Queue is the River queue of the agent's jobs (river.QueueDefault);
	// a benchmark sharing a database with live workers uses its own.
	Queue string
	// PromptBudget caps the prompt a step sends, in tokens, below its
	// model's window (PromptBudgetDefault); a negative value leaves only
	// the window.
	PromptBudget int
	// RateLimits are the providers' limits of each model, by model name,
	// shared by every worker through Postgres; a model with none is
	// limited by what its provider says in its answers (see ratelimit.go).
	RateLimits map[string]RateLimit
	// Guest makes a working agent leave the database's upkeep to others:
	// it runs no maintenance pass and takes no part in River's leader
	// election (a benchmark beside live workers).
	Guest bool
	// WebhookRetryBase is the delay after a webhook delivery's first
	// failed attempt, doubled after each (WebhookRetryBaseDefault).
	WebhookRetryBase time.Duration
	// Citations is the citations mode of a research that asks for none
	// (citations.go: off, flag or revise); "" means revise for a language
	// model and flag for the offline policy.
	Citations string
	// VerifyModel, when set, is the model that judges every cited claim
	// of a report (citations_judge.go); unset, a run's own model judges
	// (never the offline policy). It must be the default model or one of
	// Deps.Models.
	VerifyModel string
	// JudgeOff turns the citation judge off: the lexical check alone
	// decides (for cost, or to measure it alone).
	JudgeOff bool
	// Outage says how long and how steps wait out a provider that is down
	// (breaker.go, outage.go).
	Outage OutageConfig
	// Pin says whether a research keeps the prompts, types, tool schemas,
	// profiles and limits it started with across deploys (PinRun, the
	// default) or takes the deploy's at its next step (PinLatest); see
	// behaviour.go.
	Pin string
}

func (c Config) withDefaults() Config {
	c.StepTimeout = cmp.Or(c.StepTimeout, StepTimeoutDefault)
	c.FetchCooldown = cmp.Or(c.FetchCooldown, FetchCooldownDefault)
	c.FetchPollInterval = cmp.Or(c.FetchPollInterval, FetchPollDefault)
	c.MaxWorkers = cmp.Or(c.MaxWorkers, MaxWorkersDefault)
	c.Slice = cmp.Or(c.Slice, SliceDefault)
	c.RescueStuckJobsAfter = cmp.Or(c.RescueStuckJobsAfter, c.jobTimeout()+RescueMarginDefault)
	c.MaxCompletionTokens = cmp.Or(c.MaxCompletionTokens, MaxCompletionTokensDefault)
	c.PromptBudget = cmp.Or(c.PromptBudget, PromptBudgetDefault)
	c.MaintainInterval = cmp.Or(c.MaintainInterval, MaintainIntervalDefault)
	c.FetchCacheAge = cmp.Or(c.FetchCacheAge, FetchCacheAgeDefault)
	c.MaxReportChars = cmp.Or(c.MaxReportChars, MaxReportCharsDefault)
	c.Queue = cmp.Or(c.Queue, river.QueueDefault)
	c.WebhookRetryBase = cmp.Or(c.WebhookRetryBase, WebhookRetryBaseDefault)
	c.Outage = c.Outage.withDefaults(c.StepTimeout)
	return c
}

// jobTimeout is the longest a step job may run: its slice of consecutive
// steps, and the last step it starts.
func (c Config) jobTimeout() time.Duration {
	return c.StepTimeout + max(c.Slice, 0)
}

func (c Config) validate() error {
	if c.RescueStuckJobsAfter <= c.jobTimeout() {
		return fmt.Errorf("RescueStuckJobsAfter (%s) must be greater than StepTimeout plus Slice (%s)",
			c.RescueStuckJobsAfter, c.jobTimeout())
	}
	if err := checkCitationsMode("Citations", c.Citations); err != nil {
		return err
	}
	if err := checkPinMode("Pin", c.Pin); err != nil {
		return err
	}
	if c.MaxSubagents != nil && (*c.MaxSubagents < 0 || *c.MaxSubagents > MaxSubagentsPerTree) {
		return fmt.Errorf("MaxSubagents must be 0 to %d", MaxSubagentsPerTree)
	}
	if c.MaxCompletionTokens < 0 || c.MaintainInterval < 0 {
		return errors.New("MaxCompletionTokens and MaintainInterval must not be negative")
	}
	if c.MaxCostUSD < 0 || c.MaxTokens < 0 {
		return errors.New("budgets must not be negative")
	}
	if err := c.Outage.validate(); err != nil {
		return fmt.Errorf("outage settings: %w", err)
	}
	return nil
}

// Service runs research agents, for the whole process: it owns the River
// client that inserts and works the jobs of steps, wakes, timeouts and
// webhooks, the models, and the message system.
type Service struct {
	pool      *pgxpool.Pool
	model     llm.Model
	messenger Messenger
	logger    *slog.Logger
	config    Config
	observer  Observer
	fault     func(point string)
	search    Searcher
	fetch     Fetcher
	webhooks  WebhookSender
	types     *Types
	models    []llm.Model // the models a sub-agent may be given, the default first
	// version is this binary's gb version; current is the deploy's
	// behaviour bundle, bundles those of other deploys that runs are
	// pinned to, by hash, and bundleStored says current is in Postgres
	// (behaviour.go).
	version      string
	current      *behaviour
	bundles      sync.Map
	bundleStored atomic.Bool
	river        *river.Client[pgx.Tx]
	rate         *limiter // the shared rate limits, this process's side
	// deadlines is the drain the agent runs, if any, and its steps'
	// recent durations (deadline.go).
	deadlines *deadlines
	// tel is the agent's OpenTelemetry instrumentation (telemetry.go).
	tel *instruments
	// judgements are the citation judge's verdicts waiting for their
	// step's transaction, by run and step (citations_judge.go).
	judgements sync.Map

	// stopping is set once Stop is called: running jobs hand their runs
	// over after the step they are making.
	stopping atomic.Bool

	mu       sync.Mutex
	working  *working             // set between begin and end (lifecycle.go)
	suspects map[string]time.Time // workers seen without their liveness lock, since when
}

// Points of a step where a fault hook (Deps.Fault) is called.
const (
	// FaultAfterModel: the model answered, nothing of the step is recorded.
	FaultAfterModel = "after_model"
	// FaultAfterTools: the tools ran in the step's open transaction.
	FaultAfterTools = "after_tools"
	// FaultBeforeCommit: the step's transaction is about to commit.
	FaultBeforeCommit = "before_commit"
	// FaultAfterCommit: the step's transaction has committed.
	FaultAfterCommit = "after_commit"
)

// Observer is told about the life of steps. Its methods must be quick and
// safe for concurrent use.
type Observer interface {
	// StepStarted is called when a step of a run starts (at is when its job began loading it, for the first step of a job).
	StepStarted(runID int64, step int, at time.Time)
	// StepCommitted is called after a step's transaction commits.
	StepCommitted(runID int64, step int, at time.Time)
}

// Deps are what a Service is built from.
type Deps struct {
	Pool      *pgxpool.Pool
	Model     llm.Model
	Messenger Messenger
	Logger    *slog.Logger
	Config    Config
	// Observer, when set, is told when steps start and commit (for metrics
	// and benchmarks).
	Observer Observer
	// Fault, when set, is called at the points of a step named by the
	// Fault* constants; chaos tests kill the process there.
	Fault func(point string)
	// Search and Fetch, when both are set, give every agent the web tools
	// web_search and fetch.
	Search Searcher
	Fetch  Fetcher
	// Webhooks posts the webhooks of ended researches and checks their
	// URLs; without it a URL's form alone is checked, and this process's
	// delivery attempts fail (to be retried by one that has it).
	Webhooks WebhookSender
	// Models are the models spawn_subagent may give a sub-agent, by name
	// (the allow-list; Model is the default and is added first when
	// missing). Empty means Model only.
	Models []llm.Model
	// Types is the registry of sub-agent types; nil means the built-in
	// ones (LoadTypes("")).
	Types *Types
	// Prompts are the parts of agents' system prompts; nil means the
	// embedded ones (prompts.Embedded).
	Prompts *prompts.Set
	// Version is the gb version recorded with the bundle and each step;
	// "" means BuildVersion.
	Version string
	// Work makes the River client able to work jobs (a worker); without it
	// the client only inserts (the API and the scheduler).
	Work bool
	// Tracer and Meter are the OpenTelemetry providers of the agent's
	// spans and metrics (telemetry.go, trace.go); nil turns each off.
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
}

// New builds a Service and its River client. Start works jobs when Work is set.
func New(d Deps) (*Service, error) {
	if d.Pool == nil || d.Model == nil {
		return nil, errors.New("jobs.New needs a pool and a model")
	}
	cfg := d.Config.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invalid agent config: %w", err)
	}
	a := &Service{pool: d.Pool, model: d.Model, messenger: d.Messenger, config: cfg, observer: d.Observer, fault: d.Fault,
		search: d.Search, fetch: d.Fetch, webhooks: d.Webhooks, rate: newLimiter(cfg.RateLimits), deadlines: newDeadlines(),
		logger: cmp.Or(d.Logger, slog.Default()).With("component", "agent")}
	tel, err := newInstruments(d.Tracer, d.Meter)
	if err != nil {
		return nil, err
	}
	a.tel = tel
	workers := river.NewWorkers()
	river.AddWorker(workers, &stepWorker{agent: a})
	river.AddWorker(workers, &timeoutWorker{agent: a})
	addWakeWorker(workers, a)
	river.AddWorker(workers, &webhookWorker{agent: a})
	a.models = []llm.Model{d.Model}
	for _, m := range d.Models {
		if a.modelNamed(m.Name()) == nil {
			a.models = append(a.models, m)
		}
	}
	if a.types = d.Types; a.types == nil {
		types, err := LoadTypes("")
		if err != nil {
			return nil, err
		}
		a.types = types
	}
	a.version = cmp.Or(d.Version, BuildVersion())
	set := d.Prompts
	if set == nil {
		set = prompts.Embedded()
	}
	if a.current, err = a.currentBehaviour(set, a.version); err != nil {
		return nil, err
	}
	rc := &river.Config{
		Workers:              workers,
		JobTimeout:           cfg.jobTimeout(),
		RescueStuckJobsAfter: cfg.RescueStuckJobsAfter,
		FetchCooldown:        cfg.FetchCooldown,
		FetchPollInterval:    cfg.FetchPollInterval,
		Logger:               a.logger.With("component", "river"),
		// A guest may work beside clients that know other job kinds.
		LeaderElectionDisabled: cfg.Guest,
		Middleware:             []rivertype.Middleware{&treeOrder{}},
	}
	if d.Tracer != nil {
		// Every job kind is worked in a span of River's OpenTelemetry
		// middleware, the child of its run's span (jobTracing, first).
		mp := d.Meter
		if mp == nil {
			mp = noopmetric.NewMeterProvider()
		}
		rc.Middleware = append([]rivertype.Middleware{&jobTracing{agent: a}, otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
			TracerProvider: d.Tracer, MeterProvider: mp, EnableTracePropagation: true, EnableWorkSpanJobKindSuffix: true,
		})}, rc.Middleware...)
	}
	if d.Work {
		rc.Queues = map[string]river.QueueConfig{cfg.Queue: {MaxWorkers: cfg.MaxWorkers}}
	}
	client, err := river.NewClient(riverpgxv5.New(d.Pool), rc)
	if err != nil {
		return nil, fmt.Errorf("error creating river client: %w", err)
	}
	a.river = client
	return a, nil
}

// injectFault calls the fault hook, if any, at a point of a step.
func (a *Service) injectFault(point string) {
	if a.fault != nil {
		a.fault(point)
	}
}

// modelNamed returns the model of that name, or nil.
func (a *Service) modelNamed(name string) llm.Model {
	for _, m := range a.models {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

// modelFor is the model a run works with: the one it records, or the
// default when that one is not configured any more.
func (a *Service) modelFor(run *Run) llm.Model {
	if m := a.modelNamed(run.Model); m != nil {
		return m
	}
	return a.model
}

// modelNames lists the models a sub-agent may be given, the default first.
func (a *Service) modelNames() []string {
	names := make([]string, len(a.models))
	for i, m := range a.models {
		names[i] = m.Name()
	}
	return names
}

// web reports whether agents get the web tools.
func (a *Service) web() bool { return a.search != nil && a.fetch != nil }

// River returns the agent's River client.
func (a *Service) River() *river.Client[pgx.Tx] { return a.river }

// Pool returns the agent's database pool.
func (a *Service) Pool() *pgxpool.Pool { return a.pool }

// ModelName is the name recorded on the runs this agent starts.
func (a *Service) ModelName() string { return a.model.Name() }

// Start starts working jobs. Stop must be called before the process exits
// or freezes.
//
// Jobs do not end with ctx: a step is interrupted only by Stop, which puts
// it back in the queue without spending an attempt.
func (a *Service) Start(ctx context.Context) error {
	if err := a.begin(ctx); err != nil {
		return err
	}
	if err := a.river.Start(context.WithoutCancel(ctx)); err != nil {
		a.end()
		return fmt.Errorf("error starting river client: %w", err)
	}
	return nil
}

// Stop stops fetching jobs and waits for running ones; when ctx ends first,
// running jobs are cancelled and go back to the queue.
func (a *Service) Stop(ctx context.Context) error {
	a.stopping.Store(true)
	defer a.stopping.Store(false)
	err := a.river.Stop(ctx)
	if err != nil && ctx.Err() != nil {
		err = a.river.StopAndCancel(context.WithoutCancel(ctx))
	}
	a.end()
	if err != nil {
		return fmt.Errorf("error stopping river client: %w", err)
	}
	return nil
}
