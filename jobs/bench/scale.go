package bench

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/jobs"
)

// Row names of the scale run.
const (
	RowScaleModel   = "scale: peak agents in model calls"
	RowScaleOpen    = "scale: peak pool connections open"
	RowScaleUsed    = "scale: peak pool connections in use"
	RowScaleRSS     = "scale: peak RSS"
	RowScaleWall    = "scale: wall time"
	RowScaleTree50  = "scale: tree completion p50 / wall"
	RowScaleTree99  = "scale: tree completion p99 / wall"
	RowScaleErrors  = "scale: errors"
	RowScaleSucceed = "scale: runs succeeded"
)

// scaleStarters is how many roots of the scale run are started at once.
const scaleStarters = 16

// scaleResult is what the scale run measured.
type scaleResult struct {
	peakModel          int64
	peakOpen, peakUsed int32
	rssBefore, rssPeak int64
	wall               time.Duration
	completion         []time.Duration
	runs, succeeded    int
	errors             int
	firstError         string
	rssReset           bool
	trees              int
}

// scale runs o.Trees trees at once on one agent, each model call taking
// o.ModelLatency, and adds its rows.
func (e *env) scale(ctx context.Context, r *Report) error {
	o := e.o
	o.Progress(fmt.Sprintf("scale run: %d trees of 4 agents, model latency %s, %d max workers, pool %d",
		o.Trees, o.ModelLatency, o.MaxWorkers, e.pool.Config().MaxConns))
	res, err := e.scaleRun(ctx)
	if err != nil {
		return fmt.Errorf("scale run: %w", err)
	}
	d := o.ModelLatency
	// The least time the batch can take: four model calls in a row per
	// tree, and every call of the batch shared among the workers.
	least := max(4*d, time.Duration(math.Ceil(float64(o.Trees*TreeSteps)/float64(o.MaxWorkers)))*d)
	leastCell := na("-")
	if least > 0 {
		leastCell = dur(least)
	}
	pool := float64(e.pool.Config().MaxConns)
	r.add(RowScaleModel, count(float64(res.peakModel), 0), count(float64(o.MaxWorkers), 0), "max workers")
	r.add(RowScaleOpen, count(float64(res.peakOpen), 0), count(pool, 0), "pool size (pgxpool.Stat, sampled)")
	r.add(RowScaleUsed, count(float64(res.peakUsed), 0), count(pool, 0), "pool size (pgxpool.Stat, sampled)")
	before := "RSS before the run (VmRSS; peak is VmHWM)"
	if !res.rssReset {
		before = "RSS before the run (VmRSS; peak is VmHWM since the process started)"
	}
	r.add(RowScaleRSS, megabytes(res.rssPeak), megabytes(res.rssBefore), before)
	r.add(RowScaleWall, dur(res.wall), leastCell, "the least the model latency allows")
	frac := func(q float64) Cell {
		if len(res.completion) == 0 || res.wall <= 0 {
			return na("n/a")
		}
		return fraction(float64(Pct(res.completion, q)) / float64(res.wall))
	}
	r.add(RowScaleTree50, frac(.5), na("-"), "a tree's start to its root's end, over the wall time")
	r.add(RowScaleTree99, frac(.99), na("-"), "a tree's start to its root's end, over the wall time")
	errText := "none"
	if res.firstError != "" {
		errText = "first: " + res.firstError
	}
	r.add(RowScaleErrors, count(float64(res.errors), 0), na("-"), errText)
	r.add(RowScaleSucceed, count(float64(res.succeeded), 0), count(float64(o.Trees*(1+TreeKids)), 0),
		fmt.Sprintf("every run of %d trees (%d started)", o.Trees, res.trees))
	return nil
}

// scaleRun starts the trees and waits for them, sampling the pool.
func (e *env) scaleRun(ctx context.Context) (scaleResult, error) {
	o := e.o
	times := NewStepTimes(nil)
	model := &Latency{Model: &TreeModel{}, Delay: o.ModelLatency}
	a, err := StartAgent(ctx, e.pool, model, times, e.agentConfig(e.queue("scale")), e.logger)
	if err != nil {
		return scaleResult{}, err
	}
	res := scaleResult{rssReset: resetPeakRSS(), rssBefore: memoryKB("VmRSS")}
	s := samplePool(e.pool)
	begin := time.Now()
	trees, errs := StartTrees(ctx, a, TreesParams{Users: e.users, Trees: o.Trees, Parallel: scaleStarters, Dataset: e.dataset})
	werr := times.WaitCommits(ctx, len(trees)*TreeSteps, max(30*time.Second, 10*o.ModelLatency))
	waited := time.Now()
	res.peakOpen, res.peakUsed = s.stop()
	res.rssPeak = memoryKB("VmHWM")
	res.peakModel = model.Peak()
	if err := StopAgent(a); err != nil {
		return scaleResult{}, err
	}
	res.trees = len(trees)
	res.errors = len(errs)
	if len(errs) > 0 {
		res.firstError = errs[0].Error()
	}
	if werr != nil {
		res.errors++
		res.firstError = werr.Error()
	}
	var last time.Time
	for _, t := range trees {
		if end, ok := times.CommittedAt(t.Root, RootSteps); ok {
			res.completion = append(res.completion, end.Sub(t.Start))
			last = maxTime(last, end)
		}
	}
	if last.IsZero() {
		last = waited
	}
	res.wall = last.Sub(begin)
	if err := e.countRuns(ctx, trees, &res); err != nil {
		return scaleResult{}, err
	}
	return res, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// countRuns counts the runs of the trees and those that succeeded; each
// run that did not is an error.
func (e *env) countRuns(ctx context.Context, trees []Tree, res *scaleResult) error {
	for _, t := range trees {
		tree, err := jobs.Tree(ctx, e.pool, t.Root)
		if err != nil {
			return err
		}
		res.runs += len(tree)
		for _, run := range tree {
			if run.Status == jobs.StatusSucceeded {
				res.succeeded++
				continue
			}
			res.errors++
			if res.firstError == "" {
				res.firstError = fmt.Sprintf("run %d %s: %s", run.ID, run.Status, run.Error)
			}
		}
		if missing := 1 + TreeKids - len(tree); missing > 0 {
			res.errors += missing
		}
	}
	return nil
}

// poolSampler records the most connections a pool had open and in use.
type poolSampler struct {
	stopOnce sync.Once
	done     chan struct{}
	finished chan struct{}
	open     int32
	used     int32
}

// samplePool samples pool's statistics every 5 ms until stop.
func samplePool(pool *pgxpool.Pool) *poolSampler {
	s := &poolSampler{done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(s.finished)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			st := pool.Stat()
			s.open = max(s.open, st.TotalConns())
			s.used = max(s.used, st.AcquiredConns())
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peaks.
func (s *poolSampler) stop() (open, used int32) {
	s.stopOnce.Do(func() { close(s.done) })
	<-s.finished
	return s.open, s.used
}
