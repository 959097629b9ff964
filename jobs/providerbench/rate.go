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

// RateOptions size a run of trees against a rate limit.
type RateOptions struct {
	EnvOptions
	// Trees is how many trees start at once, each a root and
	// SubagentsPerTree sub-agents (default 30).
	Trees int
	// SubSteps is how many pages each sub-agent fetches before its report
	// (default 1).
	SubSteps int
	// PageSize is the characters of each page (default 2,000).
	PageSize int
	// RPM and TPM are the provider's limits per minute (0: none).
	RPM, TPM int
	// Latency is how long the provider takes to answer (default 200 ms).
	Latency time.Duration
}

// RateResult is what the trees did against the limit.
type RateResult struct {
	Runs, Succeeded int
	// Errors are the errors of the runs that did not succeed.
	Errors []string
	// Elapsed is the time from the first start to the last end.
	Elapsed  time.Duration
	Provider openaifake.Stats
	// Refused counts the provider's 429s; Share is their share of the
	// requests.
	Refused int
	Share   float64
	// Throughput is what the provider accepted as a share of what its
	// binding limit allowed from the first accepted call to the last: a
	// minute's capacity at once, then the limit's rate.
	Throughput float64
	// Binding names the binding limit: "RPM" or "TPM".
	Binding string
	// PeakRunning is the most step jobs running at once (each holds a
	// worker slot), MeanRunning how many ran on average over the run;
	// PeakInFlight is the most calls the provider held at once.
	PeakRunning, PeakInFlight int
	MeanRunning               float64
	Ledger                    Ledger
}

// RateLimits starts the trees at once and waits for them all.
func RateLimits(ctx context.Context, o RateOptions) (RateResult, error) {
	o.Trees = cmp.Or(o.Trees, 30)
	o.SubSteps = cmp.Or(o.SubSteps, 1)
	o.PageSize = cmp.Or(o.PageSize, 2000)
	if o.Latency == 0 {
		o.Latency = 200 * time.Millisecond
	}
	o.Provider.RPM, o.Provider.TPM, o.Provider.Latency = o.RPM, o.TPM, o.Latency
	e, err := newEnv(ctx, o.EnvOptions, o.PageSize, func(p *pages) openaifake.Brain { return treeBrain(p, o.SubSteps) })
	if err != nil {
		return RateResult{}, err
	}
	defer e.Close()
	sctx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var peak int
	var mean float64
	wg.Go(func() { peak, mean = sampleRunning(sctx, e) })
	began := time.Now()
	roots, err := startTrees(ctx, e, o.Trees)
	if err == nil {
		err = e.Wait(ctx, roots...)
	}
	stopSampling()
	wg.Wait()
	if err != nil {
		return RateResult{}, err
	}
	r := RateResult{Elapsed: time.Since(began), Provider: e.Stats(), PeakRunning: peak, MeanRunning: mean}
	r.PeakInFlight = r.Provider.MaxInFlight
	r.Refused = r.Provider.Refused429RPM + r.Provider.Refused429TPM + r.Provider.TooLarge
	r.Share = float64(r.Refused) / float64(max(r.Provider.Requests, 1))
	r.Throughput, r.Binding = throughput(r.Provider, o.RPM, o.TPM)
	if err := outcomes(ctx, e, roots, &r.Runs, &r.Succeeded, &r.Errors); err != nil {
		return r, err
	}
	r.Ledger, err = ReadLedger(ctx, e.Pool, roots, e.Calls())
	return r, err
}

// throughput is what the provider accepted as a share of what its binding
// limit allowed over the run, and which limit that is.
func throughput(s openaifake.Stats, rpm, tpm int) (float64, string) {
	minutes := s.LastAccepted.Sub(s.FirstAccepted).Minutes()
	share := func(used, limit int) float64 {
		if limit <= 0 {
			return 0
		}
		return float64(used) / (float64(limit) * (1 + minutes))
	}
	req, tok := share(s.Billed, rpm), share(s.TPMUsed, tpm)
	if tok > req {
		return tok, "TPM"
	}
	return req, "RPM"
}

// sampleRunning samples the step jobs of the scenario's queue running
// until ctx ends, every 20 ms, and returns the most seen at once and the
// mean of the samples.
func sampleRunning(ctx context.Context, e *Env) (peak int, mean float64) {
	var sum, samples int
	for {
		var n int
		if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'running' AND kind = $1
			AND queue = $2`, jobs.StepKind, e.Queue).Scan(&n); err == nil {
			peak, sum, samples = max(peak, n), sum+n, samples+1
		}
		select {
		case <-ctx.Done():
			if samples > 0 {
				mean = float64(sum) / float64(samples)
			}
			return peak, mean
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// outcomes counts the runs of the trees of roots and collects the errors
// of those that did not succeed.
func outcomes(ctx context.Context, e *Env, roots []int64, runs, succeeded *int, errs *[]string) error {
	rows, err := e.Pool.Query(ctx, `SELECT status, error FROM gb_agent_research_runs WHERE root_id = ANY($1)`, roots)
	if err != nil {
		return fmt.Errorf("error reading the runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var status, msg string
		if err := rows.Scan(&status, &msg); err != nil {
			return fmt.Errorf("error reading the runs: %w", err)
		}
		*runs++
		if status == jobs.StatusSucceeded {
			*succeeded++
		} else {
			*errs = append(*errs, status+": "+msg)
		}
	}
	return rows.Err()
}
