package providerbench

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
)

// InterruptOptions size a run of trees whose workers are stopped again and
// again in the middle of their model calls, as Lambda deadlines stop them.
type InterruptOptions struct {
	EnvOptions
	// Trees is how many trees start at once (default 6).
	Trees int
	// Latency is how long the provider takes to answer (default 400 ms).
	Latency time.Duration
	// Every is how often a worker is stopped (default 700 ms); each stop
	// gives its running steps Grace to finish (default 50 ms) before they
	// are cut off and put back in the queue.
	Every, Grace time.Duration
}

// InterruptResult is what the interruptions left.
type InterruptResult struct {
	Runs, Succeeded int
	Errors          []string
	Stops           int
	Provider        openaifake.Stats
	Ledger          Ledger
}

// Interruptions runs trees while their workers are stopped and started
// again, and compares the ledger with the provider's bill.
func Interruptions(ctx context.Context, o InterruptOptions) (InterruptResult, error) {
	o.Trees = cmp.Or(o.Trees, 6)
	o.Latency = cmp.Or(o.Latency, 400*time.Millisecond)
	o.Every, o.Grace = cmp.Or(o.Every, 700*time.Millisecond), cmp.Or(o.Grace, 50*time.Millisecond)
	o.Workers = max(o.Workers, 2)
	o.Provider.Latency = o.Latency
	e, err := newEnv(ctx, o.EnvOptions, 2000, func(p *pages) openaifake.Brain { return treeBrain(p, 2) })
	if err != nil {
		return InterruptResult{}, err
	}
	defer e.Close()
	var roots []int64
	for i := range o.Trees {
		user, err := e.NewUser(ctx)
		if err != nil {
			return InterruptResult{}, err
		}
		run, err := e.Start(ctx, jobs.StartParams{UserID: user, Topic: fmt.Sprintf("tree %d", i+1), MaxSteps: 4})
		if err != nil {
			return InterruptResult{}, err
		}
		roots = append(roots, run.ID)
	}
	var r InterruptResult
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var stopErr error
	wg.Go(func() { r.Stops, stopErr = e.interrupt(sctx, o.Every, o.Grace) })
	err = e.Wait(ctx, roots...)
	stop()
	wg.Wait()
	if err != nil {
		return r, err
	}
	if stopErr != nil {
		return r, stopErr
	}
	if err := e.settled(ctx); err != nil {
		return r, err
	}
	r.Provider = e.Stats()
	if err := outcomes(ctx, e, roots, &r.Runs, &r.Succeeded, &r.Errors); err != nil {
		return r, err
	}
	r.Ledger, err = ReadLedger(ctx, e.Pool, roots, e.Calls())
	return r, err
}

// interrupt stops the agents in turn every so often, giving their steps
// grace to finish, and starts them again, until ctx ends. Each stop waits
// for every, and then for the scenario to have committed a step since the
// last stop: on a machine slow enough that no step fits between two
// stops, the stops would otherwise cut every step off and no run would
// ever end.
func (e *Env) interrupt(ctx context.Context, every, grace time.Duration) (int, error) {
	stops := 0
	last := -1
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return stops, nil
		case <-time.After(every):
		}
		n, err := e.committedSteps(ctx)
		if ctx.Err() != nil {
			return stops, nil
		}
		if err != nil {
			return stops, err
		}
		if n == last {
			continue // no step went through since the last stop: let one
		}
		last = n
		a := e.Agents[i%len(e.Agents)]
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
		_ = a.Stop(sctx) // running steps past grace are cut off and put back
		cancel()
		stops++
		if err := a.Start(context.WithoutCancel(ctx)); err != nil {
			return stops, fmt.Errorf("error restarting a worker: %w", err)
		}
	}
}

// committedSteps counts the steps the scenario's runs have recorded.
func (e *Env) committedSteps(ctx context.Context) (int, error) {
	var n int
	err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_steps s JOIN gb_agent_research_runs r
		ON r.id = s.run_id WHERE r.user_id IN (SELECT id FROM gb_users
		WHERE name LIKE 'providerbench\_' || $1 || '\_%')`, e.tag).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("error counting the steps of the scenario: %w", err)
	}
	return n, nil
}

// settled waits until no call of the scenario is in flight: a call cut off
// is settled at once by its step, one whose worker vanished by the
// maintenance pass.
func (e *Env) settled(ctx context.Context) error {
	for {
		var open int
		if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM gb_model_calls c JOIN gb_agent_research_runs r
			ON r.id = c.run_id WHERE c.status = 'reserved' AND r.user_id IN (SELECT id FROM gb_users
			WHERE name LIKE 'providerbench\_' || $1 || '\_%')`, e.tag).Scan(&open); err != nil {
			return fmt.Errorf("error waiting for calls in flight: %w", err)
		}
		if open == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d calls still in flight: %w", open, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
