package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// AgentConfig is an agent for a bench: its queue, its workers, and no
// part in the database's upkeep (jobs.Config.Guest): on a database live
// workers share, a maintenance pass would repair their runs into the
// bench's queue.
func AgentConfig(queue string, maxWorkers int) jobs.Config {
	return jobs.Config{Queue: queue, MaxWorkers: maxWorkers, Guest: true}
}

// StartAgent builds a working agent of model on pool and starts it.
func StartAgent(ctx context.Context, pool *pgxpool.Pool, model llm.Model, obs jobs.Observer, cfg jobs.Config,
	logger *slog.Logger) (*jobs.Service, error) {
	a, err := jobs.New(jobs.Deps{Pool: pool, Model: model, Work: true, Observer: obs, Logger: logger, Config: cfg})
	if err != nil {
		return nil, err
	}
	if err := a.Start(ctx); err != nil {
		return nil, err
	}
	time.Sleep(settle)
	return a, nil
}

// StopAgent stops an agent, its running steps cancelled after 10 s.
func StopAgent(a *jobs.Service) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.Stop(ctx)
}

// RunsParams are a batch of research runs started at once.
type RunsParams struct {
	// Users start the runs, run i by Users[i%len(Users)]: a user may have
	// jobs.MaxWorkingPerUser runs working at once.
	Users []int64
	// Runs is how many runs; each makes Steps steps.
	Runs, Steps int
	// Dataset is their knowledge base ("" for jobs.DefaultDataset).
	Dataset string
	// Topic is the topic of run i; nil numbers them.
	Topic func(i int) string
	// Queue is the agent's queue (river.QueueDefault when empty), where
	// Finish finds which steps went through the queue.
	Queue string
}

// Batch is a set of runs started at once.
type Batch struct {
	p     RunsParams
	begin time.Time
	ids   []int64
}

// StartRuns forgets what times recorded and starts the runs of p.
func StartRuns(ctx context.Context, a *jobs.Service, times *StepTimes, p RunsParams) (*Batch, error) {
	if len(p.Users) == 0 {
		return nil, errors.New("no users to start runs")
	}
	topic := p.Topic
	if topic == nil {
		topic = func(i int) string { return fmt.Sprintf("gb bench run %d", i) }
	}
	times.Reset()
	b := &Batch{p: p, begin: time.Now()}
	for i := range p.Runs {
		run, _, err := a.StartResearch(ctx, jobs.StartParams{UserID: p.Users[i%len(p.Users)], Topic: topic(i),
			MaxSteps: p.Steps, Dataset: p.Dataset})
		if err != nil {
			return nil, fmt.Errorf("error starting run %d: %w", i, err)
		}
		b.ids = append(b.ids, run.ID)
	}
	return b, nil
}

// Wait waits until every step of the batch has committed.
func (b *Batch) Wait(ctx context.Context, times *StepTimes) error {
	if err := times.WaitCommits(ctx, b.p.Runs*b.p.Steps, 30*time.Second); err != nil {
		return fmt.Errorf("agent runs: %w", err)
	}
	return nil
}

// IDs are the runs of the batch.
func (b *Batch) IDs() []int64 { return b.ids }

// Finish checks that every run succeeded after all its steps and returns
// the batch's timings.
func (b *Batch) Finish(ctx context.Context, pool *pgxpool.Pool, times *StepTimes) (ChainStats, error) {
	queued, err := QueuedSteps(ctx, pool, cmp.Or(b.p.Queue, river.QueueDefault), b.ids)
	if err != nil {
		return ChainStats{}, err
	}
	for _, id := range b.ids {
		run, err := jobs.GetRun(ctx, pool, id)
		if err != nil {
			return ChainStats{}, err
		}
		if run.Status != jobs.StatusSucceeded || run.Steps != b.p.Steps {
			return ChainStats{}, fmt.Errorf("run %d: %s after %d steps (want %d): %s", id, run.Status, run.Steps, b.p.Steps, run.Error)
		}
	}
	return times.Stats(b.begin, queued), nil
}

// AgentRuns starts the runs of p, waits for all their steps and returns
// their timings.
func AgentRuns(ctx context.Context, a *jobs.Service, times *StepTimes, p RunsParams) (ChainStats, error) {
	b, err := StartRuns(ctx, a, times, p)
	if err != nil {
		return ChainStats{}, err
	}
	if err := b.Wait(ctx, times); err != nil {
		return ChainStats{}, err
	}
	return b.Finish(ctx, a.Pool(), times)
}

// QueuedSteps reads which steps of runs started a step job of their own in
// queue (the others ran in the job of the step before): only those went
// through the queue.
func QueuedSteps(ctx context.Context, pool *pgxpool.Pool, queue string, runs []int64) (func(StepKey) bool, error) {
	rows, err := pool.Query(ctx, `SELECT args FROM river_job
		WHERE queue = $1 AND kind = $2 AND (args->>'run_id')::bigint = ANY($3)`, queue, jobs.StepKind, runs)
	if err != nil {
		return nil, fmt.Errorf("error reading step jobs: %w", err)
	}
	args, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("error reading step jobs: %w", err)
	}
	set := map[StepKey]bool{}
	for _, raw := range args {
		var a jobs.StepArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("error decoding step job args: %w", err)
		}
		set[StepKey{a.RunID, a.Step}] = true
	}
	return func(k StepKey) bool { return set[k] }, nil
}

// TreesParams are research trees of TreeModel started one after another.
type TreesParams struct {
	// Users start the roots, root i by Users[i%len(Users)].
	Users []int64
	// Trees is how many roots.
	Trees int
	// Gap is the pause after each start.
	Gap time.Duration
	// Parallel is how many starts are made at once (1 when 0).
	Parallel int
	// Dataset is their knowledge base ("" for jobs.DefaultDataset).
	Dataset string
	// Gates, when set, is told each root's run id.
	Gates *ParkGates
}

// Tree is a started root.
type Tree struct {
	Index int
	Root  int64
	// Start is when its start was asked for.
	Start time.Time
}

// StartTrees starts the roots of p and returns those it started, with the
// errors of those it could not.
func StartTrees(ctx context.Context, a *jobs.Service, p TreesParams) ([]Tree, []error) {
	var (
		mu    sync.Mutex
		trees []Tree
		errs  []error
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for range max(p.Parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				start := time.Now()
				run, _, err := a.StartResearch(ctx, jobs.StartParams{UserID: p.Users[i%len(p.Users)], Topic: RootTopic(i),
					MaxSteps: RootSteps, Dataset: p.Dataset})
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("error starting tree %d: %w", i, err))
				} else {
					trees = append(trees, Tree{Index: i, Root: run.ID, Start: start})
				}
				mu.Unlock()
				if err == nil && p.Gates != nil {
					p.Gates.Started(i, run.ID)
				}
				time.Sleep(p.Gap)
			}
		}()
	}
	for i := range p.Trees {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return trees, errs
}

// SpawnResume reads, for trees that all succeeded, how long each
// sub-agent's first step started after the step that spawned it committed,
// and how long each root's resumed step started after its last sub-agent's
// end committed.
func SpawnResume(ctx context.Context, pool *pgxpool.Pool, times *StepTimes, trees []Tree) (spawn, resume []time.Duration, err error) {
	for _, t := range trees {
		tree, err := jobs.Tree(ctx, pool, t.Root)
		if err != nil {
			return nil, nil, err
		}
		root := tree[0]
		if root.Status != jobs.StatusSucceeded || root.Steps != RootSteps || len(tree) != 1+TreeKids {
			return nil, nil, fmt.Errorf("root %d: %s after %d steps with %d sub-agents: %s", root.ID, root.Status, root.Steps, len(tree)-1, root.Error)
		}
		spawned, _ := times.CommittedAt(root.ID, 1)
		resumed, ok := times.StartedAt(root.ID, RootSteps)
		if !ok {
			return nil, nil, fmt.Errorf("root %d: no resumed step recorded", root.ID)
		}
		var lastEnd time.Time
		for _, kid := range tree[1:] {
			start, ok1 := times.StartedAt(kid.ID, 1)
			end, ok2 := times.CommittedAt(kid.ID, KidSteps)
			if !ok1 || !ok2 || kid.Status != jobs.StatusSucceeded {
				return nil, nil, fmt.Errorf("sub-agent %d: %s, times recorded %v %v", kid.ID, kid.Status, ok1, ok2)
			}
			spawn = append(spawn, start.Sub(spawned))
			if end.After(lastEnd) {
				lastEnd = end
			}
		}
		resume = append(resume, resumed.Sub(lastEnd))
	}
	return spawn, resume, nil
}
