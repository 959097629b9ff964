package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// warmSteps are the steps of the warm-up batches, which open the pool's
// connections and prepare their statements before anything is timed.
const warmSteps = 5

// Row names of the table.
const (
	RowSteps     = "agent steps/s"
	RowCPU       = "CPU per step, this process"
	RowPGCPU     = "CPU per step, Postgres"
	RowTrips     = "round trips per step"
	RowTripsRv   = "  River's statements"
	RowTripsGB   = "  gb's statements"
	RowTripsTx   = "  begin/commit/rollback"
	RowCommits   = "commits per step"
	RowPickup50  = "pickup p50"
	RowPickup99  = "pickup p99"
	RowNext50    = "next step in the same job p50"
	RowNext99    = "next step in the same job p99"
	RowSpawn50   = "spawn -> sub-agent's first step p50"
	RowSpawn99   = "spawn -> sub-agent's first step p99"
	RowResume50  = "sub-agent's end -> parent resumes p50"
	RowResume99  = "sub-agent's end -> parent resumes p99"
	RowWake50    = "message wake p50"
	RowWake99    = "message wake p99"
	tripsPhaseGB = "gb agent steps"
	tripsPhaseRv = "River chained jobs"
)

// stepRounds is how many times agent steps and River chains are each
// measured, in turn: the rate is the median round's, the rest is pooled.
const stepRounds = 3

// phase is what one side of the steps measurement produced.
type phase struct {
	rates  []float64
	pickup []time.Duration
	next   []time.Duration
	use    usage
}

func (p *phase) add(st ChainStats, u usage) {
	p.rates = append(p.rates, st.PerSecond())
	p.pickup = append(p.pickup, st.Pickup...)
	p.next = append(p.next, st.Next...)
	p.use.cpu += u.cpu
	p.use.pg += u.pg
	if p.use.trips == nil {
		p.use.trips = TraceCounts{}
	}
	for k, v := range u.trips {
		p.use.trips[k] += v
	}
}

// rate is the median round's steps per second.
func (p *phase) rate() float64 {
	s := slices.Clone(p.rates)
	slices.Sort(s)
	return s[len(s)/2]
}

// steps measures agent steps beside River chains, stepRounds times each
// in turn, and adds their rows; it returns a run of the last batch, whose
// inbox the wake measurement uses.
func (e *env) steps(ctx context.Context, r *Report) (int64, error) {
	o := e.o
	o.Progress(fmt.Sprintf("agent steps: %d runs x %d steps, then as many River chains, %d times", o.Runs, o.Steps, stepRounds))
	var gb, rv phase
	var inbox int64
	for range stepRounds {
		st, u, ids, err := e.agentSteps(ctx)
		if err != nil {
			return 0, err
		}
		gb.add(st, u)
		inbox = ids[0]
		if st, u, err = e.riverChains(ctx); err != nil {
			return 0, err
		}
		rv.add(st, u)
	}
	e.stepRows(r, &gb, &rv)
	return inbox, nil
}

// stepRows adds the rows of the steps measurement.
func (e *env) stepRows(r *Report, gb, rv *phase) {
	o := e.o
	n := o.Runs * o.Steps * stepRounds
	per := func(d time.Duration) time.Duration { return d / time.Duration(n) }
	trips := func(u usage, kind string) Cell {
		v := u.trips.RoundTrips()
		if kind != "" {
			v = u.trips.Kind(kind)
		}
		return count(float64(v)/float64(n), 2)
	}
	chains := fmt.Sprintf("River chained jobs (%d x %d hops, own queue; median of %d)", o.Runs, o.Steps, stepRounds)
	r.add(RowSteps, rate(gb.rate()), rate(rv.rate()), chains)
	r.add(RowCPU, dur(per(gb.use.cpu)), dur(per(rv.use.cpu)), "a River hop, getrusage of this process")
	if e.cluster != nil {
		r.add(RowPGCPU, dur(per(gb.use.pg)), dur(per(rv.use.pg)), "a River hop, the cluster's processes in /proc")
	} else {
		r.add(RowPGCPU, na("n/a (remote)"), na("n/a (remote)"), "a River hop")
	}
	r.add(RowTrips, trips(gb.use, ""), trips(rv.use, ""), "a River hop, pgx tracer")
	r.add(RowTripsRv, trips(gb.use, KindRiver), trips(rv.use, KindRiver), "River's own (\"-- name: \" queries)")
	r.add(RowTripsGB, trips(gb.use, KindGB), trips(rv.use, KindGB), "for River, the hop worker's own (none but begin and commit)")
	r.add(RowTripsTx, trips(gb.use, KindTx), trips(rv.use, KindTx), "whoever sent them")
	r.add(RowCommits, count(float64(gb.use.trips.Commits())/float64(n), 2),
		count(float64(rv.use.trips.Commits())/float64(n), 2), "a River hop: COMMITs, and writes sent outside a transaction")
	hop := "a hop's commit -> the next hop's start"
	r.add(RowPickup50, pct(gb.pickup, .5, "n/a (no step was queued)"), dur(Pct(rv.pickup, .5)), hop)
	r.add(RowPickup99, pct(gb.pickup, .99, "n/a (no step was queued)"), dur(Pct(rv.pickup, .99)), hop)
	r.add(RowNext50, pct(gb.next, .5, "n/a (every step was queued)"), dur(Pct(rv.pickup, .5)), hop)
	r.add(RowNext99, pct(gb.next, .99, "n/a (every step was queued)"), dur(Pct(rv.pickup, .99)), hop)
	r.Statements = append(r.Statements, PhaseStatements{tripsPhaseGB, n, gb.use.trips.Top(20)},
		PhaseStatements{tripsPhaseRv, n, rv.use.trips.Top(20)})
}

// negatives counts the samples below 0.
func negatives(ds []time.Duration) int {
	n := 0
	for _, d := range ds {
		if d < 0 {
			n++
		}
	}
	return n
}

// pct is the p-th percentile of ds, or none when ds is empty.
func pct(ds []time.Duration, p float64, none string) Cell {
	if len(ds) == 0 {
		return na(none)
	}
	return dur(Pct(ds, p))
}

// agentSteps measures a batch of agent runs, on an agent of its own,
// after a warm-up batch.
func (e *env) agentSteps(ctx context.Context) (ChainStats, usage, []int64, error) {
	o := e.o
	times := NewStepTimes(nil)
	q := e.queue("steps")
	a, err := StartAgent(ctx, e.pool, &ToolModel{}, times, e.agentConfig(q), e.logger)
	if err != nil {
		return ChainStats{}, usage{}, nil, err
	}
	p := RunsParams{Users: e.users, Runs: o.Runs, Steps: o.Steps, Dataset: e.dataset, Queue: q}
	warm := p
	warm.Steps = min(warmSteps, o.Steps)
	_, err = AgentRuns(ctx, a, times, warm)
	var (
		st ChainStats
		u  usage
		b  *Batch
	)
	if err == nil {
		m := e.mark()
		if b, err = StartRuns(ctx, a, times, p); err == nil {
			err = b.Wait(ctx, times)
		}
		u = m.since()
	}
	if err == nil {
		st, err = b.Finish(ctx, e.pool, times)
	}
	if serr := StopAgent(a); err == nil {
		err = serr
	}
	if err != nil {
		return ChainStats{}, usage{}, nil, fmt.Errorf("agent steps: %w", err)
	}
	return st, u, b.IDs(), nil
}

// riverChains measures as many bare River chains as agent runs, on a
// client of its own, after a warm-up.
func (e *env) riverChains(ctx context.Context) (ChainStats, usage, error) {
	o := e.o
	ch, err := StartChains(ctx, e.pool, e.river("chains"))
	if err != nil {
		return ChainStats{}, usage{}, err
	}
	var (
		st ChainStats
		u  usage
	)
	_, err = ch.Run(ctx, o.Runs, min(warmSteps, o.Steps))
	if err == nil {
		m := e.mark()
		st, err = ch.Run(ctx, o.Runs, o.Steps)
		u = m.since()
	}
	if serr := ch.Stop(); err == nil {
		err = serr
	}
	return st, u, err
}

// spawn measures spawns and resumes beside River's insert to start.
func (e *env) spawn(ctx context.Context, r *Report) error {
	o := e.o
	n := o.spawnTrees()
	o.Progress(fmt.Sprintf("spawn and resume: %d trees of a root and %d sub-agents, then %d River inserts", n, TreeKids, o.Samples))
	gates := NewParkGates(n)
	times := NewStepTimes(gates.Committed)
	a, err := StartAgent(ctx, e.pool, &TreeModel{Gates: gates}, times, e.agentConfig(e.queue("trees")), e.logger)
	if err != nil {
		return err
	}
	trees, errs := StartTrees(ctx, a, TreesParams{Users: e.users, Trees: n, Gap: 50 * time.Millisecond,
		Dataset: e.dataset, Gates: gates})
	err = errors.Join(errs...)
	if err == nil {
		err = times.WaitCommits(ctx, n*TreeSteps, 30*time.Second)
	}
	var spawned, resumed []time.Duration
	if err == nil {
		spawned, resumed, err = SpawnResume(ctx, e.pool, times, trees)
	}
	if serr := StopAgent(a); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("spawn and resume: %w", err)
	}
	ping, err := InsertToStart(ctx, e.pool, e.river("inserts"), o.Samples, 10*time.Millisecond)
	if err != nil {
		return err
	}
	if n := negatives(spawned) + negatives(resumed) + negatives(ping); n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d spawn, resume or insert samples are negative: a commit's time is taken by its "+
			"goroutine once the commit returns, and under load the job it inserted can start first.", n))
	}
	alone := fmt.Sprintf("a River job inserted alone: insert -> start (%d, 10ms apart)", o.Samples)
	r.add(RowSpawn50, dur(Pct(spawned, .5)), dur(Pct(ping, .5)), alone)
	r.add(RowSpawn99, dur(Pct(spawned, .99)), dur(Pct(ping, .99)), alone)
	r.add(RowResume50, dur(Pct(resumed, .5)), dur(Pct(ping, .5)), alone)
	r.add(RowResume99, dur(Pct(resumed, .99)), dur(Pct(ping, .99)), alone)
	return nil
}

// wake measures the message wake on the inbox of run inbox.
func (e *env) wake(ctx context.Context, r *Report, inbox int64) error {
	e.o.Progress(fmt.Sprintf("message wake: %d messages and %d bare notifications, in turn", e.o.Samples, e.o.Samples))
	msgr, raw, err := e.o.Wake(ctx, e.pool, inbox, e.o.Samples)
	if err != nil {
		return fmt.Errorf("message wake: %w", err)
	}
	bare := fmt.Sprintf("bare NOTIFY -> a LISTEN connection, from the commit (%d)", len(raw))
	r.add(RowWake50, dur(Pct(msgr, .5)), dur(Pct(raw, .5)), bare)
	r.add(RowWake99, dur(Pct(msgr, .99)), dur(Pct(raw, .99)), bare)
	return nil
}
