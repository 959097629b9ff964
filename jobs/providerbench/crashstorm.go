package providerbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// StormOptions size a crash storm: trees worked by `gb worker` processes
// on one database, SIGKILLed again and again while their calls are in
// flight.
type StormOptions struct {
	// Bin is the gb binary the workers run (`gb worker`); URL is the
	// database, migrated, that they and the scenario share. Its default
	// queue must be the scenario's alone: the workers work every job on it.
	Bin, URL string
	// Trees is how many trees start (default 6), each a root and
	// SubagentsPerTree sub-agents, each tree its own user's, one every
	// Stagger (default three quarters of Over shared among the trees), so
	// that the kills over Over land on work.
	Trees   int
	Stagger time.Duration
	// SubSteps is how many tool steps each sub-agent takes before its
	// report (default 36, at most jobs.MaxMaxSteps-1): searches of the
	// knowledge base, a message to a sibling and a short read of its own.
	SubSteps int
	// Workers is how many worker processes run at once (default 2).
	Workers int
	// LatencyMin and LatencyMax bound the provider's time to answer a call,
	// drawn at random between them (default 300 ms to 1.5 s).
	LatencyMin, LatencyMax time.Duration
	// Kills is how many SIGKILLs land (default 8), spread evenly, with some
	// jitter, over Over (default 2 minutes) from the start; each kill takes
	// a live worker at random and starts it again after Pause (default 1 s).
	Kills int
	Over  time.Duration
	Pause time.Duration
	// Within bounds the whole storm: the trees must all end by then
	// (default 8 minutes).
	Within time.Duration
	// Logger gets the scenario's own lines (default: discarded); the
	// workers' output is kept for the error of a worker that exits by
	// itself.
	Logger *slog.Logger
}

// withDefaults fills the zero fields of o.
func (o StormOptions) withDefaults() (StormOptions, error) {
	if o.Bin == "" || o.URL == "" {
		return o, errors.New("providerbench: StormOptions.Bin (the gb binary) and URL (the database) are required")
	}
	o.Trees, o.SubSteps, o.Workers = cmp.Or(o.Trees, 6), cmp.Or(o.SubSteps, 36), cmp.Or(o.Workers, 2)
	if o.SubSteps < 1 || o.SubSteps >= jobs.MaxMaxSteps {
		return o, fmt.Errorf("providerbench: SubSteps must be from 1 to %d (got %d)", jobs.MaxMaxSteps-1, o.SubSteps)
	}
	o.LatencyMin, o.LatencyMax = cmp.Or(o.LatencyMin, 300*time.Millisecond), cmp.Or(o.LatencyMax, 1500*time.Millisecond)
	if o.LatencyMax < o.LatencyMin {
		return o, fmt.Errorf("providerbench: LatencyMax (%s) is below LatencyMin (%s)", o.LatencyMax, o.LatencyMin)
	}
	o.Kills, o.Over, o.Pause = cmp.Or(o.Kills, 8), cmp.Or(o.Over, 2*time.Minute), cmp.Or(o.Pause, time.Second)
	o.Stagger = cmp.Or(o.Stagger, o.Over*3/4/time.Duration(o.Trees))
	o.Within = cmp.Or(o.Within, 8*time.Minute)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// StormResult is what the storm left.
type StormResult struct {
	// Runs counts the trees' runs, Succeeded those that succeeded; Errors
	// are the others' "name status: error".
	Runs, Succeeded int
	Errors          []string
	// EmptyRoots counts the roots that succeeded with a blank report.
	EmptyRoots int
	// Kills is the SIGKILLs that landed; Unexpected the workers that
	// exited by themselves, each with its last lines.
	Kills      int
	Unexpected []string
	// Took is the time from the first start to the last tree's end.
	Took time.Duration
	// Jobs is what the trees' step jobs went through.
	Jobs StormJobs
	// Provider is the fake provider's count and bill; Ledger is gb's;
	// Tokens sets the two side by side.
	Provider openaifake.Stats
	Ledger   Ledger
	Tokens   StormTokens
}

// StormTokens are the tokens (prompt plus completion) of the calls the
// provider billed, as it billed them and as the ledger holds them: the
// calls the ledger settled from their answer, and those it settled at
// their estimate because a kill cut them off before their answer was read.
type StormTokens struct {
	Answered                       int
	AnsweredBilled, AnsweredLedger int
	AtEstimate                     int
	EstimateBilled, EstimateLedger int
}

// tokensOf compares the tokens of the billed calls with the ledger's.
func tokensOf(l Ledger, calls []openaifake.Call) StormTokens {
	var t StormTokens
	for _, c := range calls {
		row, ok := l.Calls[c.ClientRequestID]
		switch {
		case !ok: // a mismatch of its own (Ledger.Mismatches)
		case row.Estimated:
			t.AtEstimate++
			t.EstimateBilled += c.PromptTokens + c.CompletionTokens
			t.EstimateLedger += row.PromptTokens + row.CompletionTokens
		default:
			t.Answered++
			t.AnsweredBilled += c.PromptTokens + c.CompletionTokens
			t.AnsweredLedger += row.PromptTokens + row.CompletionTokens
		}
	}
	return t
}

// StormJobs is what the step jobs of the trees went through, read from
// river_job.
type StormJobs struct {
	// Jobs counts the step jobs; Fetches the times a worker took one
	// (attempted_by); Attempts the attempts they ended with: a fetch that
	// left no attempt was given back.
	Jobs, Fetches, Attempts int
	// Rescues counts the rescues the jobs' errors record (a worker gone),
	// JobRescuesMax the most of one job; StepRescuesMax is the most times
	// one step lost its worker, as the rescue recorded it (gb:rescues);
	// Discarded counts the jobs given up.
	Rescues, JobRescuesMax, StepRescuesMax, Discarded int
	// AttemptMax is the highest attempt a job reached.
	AttemptMax int
}

// GivenBack is the attempts given back to the jobs: fetches that left no
// attempt.
func (j StormJobs) GivenBack() int { return j.Fetches - j.Attempts }

// CrashStorm runs the storm: Trees trees on Workers `gb worker` processes
// calling the fake provider, while Kills SIGKILLs land over Over. When
// every tree has ended and the calls the dead workers left in flight have
// been settled, it reads the runs, their step jobs and the ledger beside
// the provider's bill.
func CrashStorm(ctx context.Context, o StormOptions) (StormResult, error) {
	o, err := o.withDefaults()
	if err != nil {
		return StormResult{}, err
	}
	e, err := newStormEnv(ctx, o)
	if err != nil {
		return StormResult{}, err
	}
	defer e.close()
	ws, err := startWorkers(o.Bin, stormWorkerEnv(o.URL, e.Fake.URL()), o.Workers)
	if err != nil {
		return StormResult{}, err
	}
	defer ws.stop()
	var r StormResult
	wctx, cancel := context.WithTimeout(ctx, o.Within)
	defer cancel()
	kctx, stopKilling := context.WithCancel(wctx)
	defer stopKilling()
	begin := time.Now()
	killed := make(chan int, 1)
	go func() { killed <- ws.storm(kctx, begin, o) }()
	roots, err := e.startTrees(wctx, o)
	if err == nil {
		err = e.Wait(wctx, roots...)
	}
	r.Took = time.Since(begin)
	stopKilling()
	r.Kills = <-killed
	r.Unexpected = ws.unexpected()
	if err != nil {
		return r, fmt.Errorf("after %d kills: %w", r.Kills, err)
	}
	o.Logger.InfoContext(ctx, "crash storm: every tree ended", "took", r.Took.Round(time.Millisecond), "kills", r.Kills)
	if err := e.settled(wctx); err != nil {
		return r, err
	}
	return r, e.read(ctx, roots, &r)
}

// stormEnv is an Env whose agents are worker processes: a starter on the
// default queue, the provider, a dataset and the trees' users.
type stormEnv struct{ *Env }

// newStormEnv opens the database and starts the provider and the starter.
func newStormEnv(ctx context.Context, o StormOptions) (_ *stormEnv, err error) {
	pool, err := db.Open(ctx, db.PoolConfig{URL: o.URL, MaxConns: 4})
	if err != nil {
		return nil, fmt.Errorf("error opening the database: %w", err)
	}
	tag := randomTag()
	s := &stormEnv{&Env{Pool: pool, Model: ModelDefault, tag: tag, Dataset: "providerbench_" + tag}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	latency := func(*openaifake.Request, int) time.Duration {
		return o.LatencyMin + rand.N(o.LatencyMax-o.LatencyMin+1)
	}
	s.Fake = openaifake.New(openaifake.Config{LatencyFunc: latency, Brain: crewBrain(o.SubSteps)})
	model, err := openai.New(openai.Config{BaseURL: s.Fake.URL(), APIKey: openaifake.DefaultAPIKey, Model: s.Model})
	if err != nil {
		return nil, err
	}
	if _, err := kb.Load(ctx, pool, s.Dataset, stormDocs); err != nil {
		return nil, fmt.Errorf("error creating the dataset: %w", err)
	}
	if s.Starter, err = jobs.New(jobs.Deps{Pool: pool, Model: model}); err != nil {
		return nil, err
	}
	return s, nil
}

// close stops the provider, deletes what the scenario made and closes the
// database.
func (s *stormEnv) close() {
	if s.Fake != nil {
		s.Fake.Close()
	}
	s.cleanup()
	s.Pool.Close()
}

// startTrees starts o.Trees trees, each its own user's, one every
// o.Stagger.
func (s *stormEnv) startTrees(ctx context.Context, o StormOptions) ([]int64, error) {
	var roots []int64
	for i := range o.Trees {
		if i > 0 && !sleepUntil(ctx, time.Now().Add(o.Stagger)) {
			return nil, fmt.Errorf("%d trees started: %w", i, ctx.Err())
		}
		user, err := s.NewUser(ctx)
		if err != nil {
			return nil, err
		}
		run, err := s.Start(ctx, jobs.StartParams{UserID: user, Topic: fmt.Sprintf("storm tree %d", i+1), MaxSteps: 4})
		if err != nil {
			return nil, err
		}
		roots = append(roots, run.ID)
	}
	return roots, nil
}

// read fills r with the runs, their step jobs and the ledger.
func (s *stormEnv) read(ctx context.Context, roots []int64, r *StormResult) error {
	rows, err := s.Pool.Query(ctx, `SELECT name, status, error, report, id = root_id
		FROM gb_agent_research_runs WHERE root_id = ANY($1) ORDER BY id`, roots)
	if err != nil {
		return fmt.Errorf("error reading the runs: %w", err)
	}
	for rows.Next() {
		var name, status, msg, report string
		var root bool
		if err := rows.Scan(&name, &status, &msg, &report, &root); err != nil {
			rows.Close()
			return fmt.Errorf("error reading the runs: %w", err)
		}
		r.Runs++
		switch {
		case status != jobs.StatusSucceeded:
			r.Errors = append(r.Errors, fmt.Sprintf("%s %s: %s", name, status, msg))
		case root && strings.TrimSpace(report) == "":
			r.EmptyRoots++
		default:
			r.Succeeded++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error reading the runs: %w", err)
	}
	if r.Jobs, err = readStormJobs(ctx, s.Pool, roots); err != nil {
		return err
	}
	r.Provider = s.Stats()
	calls := s.Calls()
	if r.Ledger, err = ReadLedger(ctx, s.Pool, roots, calls); err != nil {
		return err
	}
	r.Tokens = tokensOf(r.Ledger, calls)
	return nil
}

// readStormJobs sums what the step jobs of the trees of roots went through.
func readStormJobs(ctx context.Context, pool *pgxpool.Pool, roots []int64) (StormJobs, error) {
	var j StormJobs
	err := pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(cardinality(j.attempted_by)), 0),
			coalesce(sum(j.attempt), 0), coalesce(max(j.attempt), 0), coalesce(sum(x.rescues), 0),
			coalesce(max(x.rescues), 0), coalesce(max((j.metadata->>'gb:rescues')::int), 0),
			count(*) FILTER (WHERE j.state = 'discarded')
		FROM river_job j JOIN gb_agent_research_runs r ON r.id = (j.args->>'run_id')::bigint,
			LATERAL (SELECT count(*) AS rescues FROM unnest(j.errors) e WHERE e->>'error' LIKE 'rescued:%') x
		WHERE j.kind = $1 AND r.root_id = ANY($2)`, jobs.StepKind, roots).
		Scan(&j.Jobs, &j.Fetches, &j.Attempts, &j.AttemptMax, &j.Rescues, &j.JobRescuesMax, &j.StepRescuesMax,
			&j.Discarded)
	if err != nil {
		return j, fmt.Errorf("error reading the step jobs: %w", err)
	}
	return j, nil
}
