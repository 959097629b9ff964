package providerbench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gbresearch/gb/infra/fakeprovider"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
)

// Outage is a provider outage a scenario meets: the fake fails every
// request in Mode for For, from when it has billed AfterCalls calls.
type Outage struct {
	Mode       fakeprovider.OutageMode
	For        time.Duration
	AfterCalls int
}

// OutageFigures is what happened at the provider around an outage.
type OutageFigures struct {
	Mode fakeprovider.OutageMode
	// Began and Ended are when the outage began and ended.
	Began, Ended time.Time
	// DuringOutage counts the requests the provider received while it was
	// down, from every worker; Probes the calls the breaker let out as
	// probes (from gb_provider_breakers).
	DuringOutage int
	Probes       int64
	// FirstAnswer is how long after the outage ended the provider billed
	// its next call.
	FirstAnswer time.Duration
	// After counts the requests after the outage, Refused429 those of them
	// refused for want of capacity, and Share their share.
	After, Refused429 int
	Share429          float64
	// MinuteBilled counts the calls billed in the minute after the outage.
	MinuteBilled int
	// Sample is a run as the API showed it in the middle of the outage
	// (status, state and provider_wait), as JSON.
	Sample string
	// States are the states the sampled run was seen in during the outage.
	States []string
}

// outageWatch turns the outage on at its time and samples a run meanwhile.
type outageWatch struct {
	o    Outage
	e    *Env
	mu   sync.Mutex
	figs OutageFigures
	seen map[string]bool
}

// watchOutage starts the outage of o once the fake has billed o.AfterCalls
// calls, and samples the run sample (0: the first root of roots) while it
// lasts; wait returns the figures once it is over.
func watchOutage(ctx context.Context, e *Env, o Outage, sample func() int64) (wait func() (OutageFigures, error)) {
	w := &outageWatch{o: o, e: e, seen: map[string]bool{}}
	w.figs.Mode = o.Mode
	done := make(chan error, 1)
	go func() { done <- w.run(ctx, sample) }()
	return func() (OutageFigures, error) {
		err := <-done
		w.mu.Lock()
		defer w.mu.Unlock()
		for s := range w.seen {
			w.figs.States = append(w.figs.States, s)
		}
		return w.figs, err
	}
}

// run waits for the outage's time, turns it on, and samples until it ends.
func (w *outageWatch) run(ctx context.Context, sample func() int64) error {
	for w.e.Stats().Billed < w.o.AfterCalls {
		if err := pause(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	if err := w.e.Fake.StartOutage(w.o.Mode, w.o.For); err != nil {
		return err
	}
	began := time.Now()
	w.mu.Lock()
	w.figs.Began, w.figs.Ended = began, began.Add(w.o.For)
	w.mu.Unlock()
	mid, sampled := began.Add(w.o.For/2), false
	for time.Now().Before(began.Add(w.o.For)) {
		run, err := jobs.GetRun(ctx, w.e.Pool, sample())
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.seen[run.State] = true
		if !sampled && time.Now().After(mid) {
			// The run as the API shows it: the first look past the middle
			// that finds it waiting, else the last.
			b, _ := json.Marshal(map[string]any{"id": run.ID, "status": run.Status, "state": run.State,
				"provider_wait": run.ProviderWait})
			w.figs.Sample, sampled = string(b), run.State == jobs.StateWaitingProvider
		}
		w.mu.Unlock()
		if err := pause(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// fill counts what the provider saw around the outage, from its log and
// its bill, and the probes from the breaker of the scenario's model.
func (f *OutageFigures) fill(ctx context.Context, e *Env) error {
	for _, ev := range e.Fake.Log() {
		switch {
		case ev.Time.Before(f.Began):
		case ev.Time.Before(f.Ended):
			f.DuringOutage++
		default:
			f.After++
			if ev.Kind == openaifake.KindRPM || ev.Kind == openaifake.KindTPM {
				f.Refused429++
			}
		}
	}
	f.Share429 = float64(f.Refused429) / float64(max(f.After, 1))
	f.FirstAnswer = -1
	for _, c := range e.Fake.Calls() {
		if c.Time.Before(f.Ended) {
			continue
		}
		if f.FirstAnswer < 0 {
			f.FirstAnswer = c.Time.Sub(f.Ended)
		}
		if c.Time.Before(f.Ended.Add(time.Minute)) {
			f.MinuteBilled++
		}
	}
	err := e.Pool.QueryRow(ctx, `SELECT coalesce(max(probes), 0) FROM gb_provider_breakers WHERE key = $1`,
		e.Model).Scan(&f.Probes)
	if err != nil {
		return fmt.Errorf("error reading the breaker: %w", err)
	}
	return nil
}

// OutageResearchOptions size a research that meets an outage.
type OutageResearchOptions struct {
	EnvOptions
	Outage Outage
	// Steps is the research's max_steps (default 12); the outage begins
	// halfway unless Outage.AfterCalls says otherwise.
	Steps int
}

// OutageResearchResult is how a research through an outage ended.
type OutageResearchResult struct {
	Status, Error string
	Steps         int
	Report        string
	Elapsed       time.Duration
	Outage        OutageFigures
	Provider      openaifake.Stats
	Ledger        Ledger
}

// OutageResearch runs one research that reads a page at every step and
// meets an outage of its provider halfway.
func OutageResearch(ctx context.Context, o OutageResearchOptions) (OutageResearchResult, error) {
	o.Steps = cmp.Or(o.Steps, 12)
	o.Outage.AfterCalls = cmp.Or(o.Outage.AfterCalls, o.Steps/2)
	o.Outage.Mode = cmp.Or(o.Outage.Mode, fakeprovider.OutageUnavailable)
	e, err := newOutageEnv(ctx, o.EnvOptions, PageSizeDefault/10, readingBrain)
	if err != nil {
		return OutageResearchResult{}, err
	}
	defer e.Close()
	began := time.Now()
	run, err := e.Start(ctx, jobs.StartParams{Topic: "tidal stream output, through an outage", MaxSteps: o.Steps})
	if err != nil {
		return OutageResearchResult{}, err
	}
	wait := watchOutage(ctx, e, o.Outage, func() int64 { return run.ID })
	if err := e.Wait(ctx, run.ID); err != nil {
		return OutageResearchResult{}, err
	}
	r := OutageResearchResult{Elapsed: time.Since(began)}
	if r.Outage, err = wait(); err != nil {
		return r, err
	}
	done, err := jobs.GetRun(ctx, e.Pool, run.ID)
	if err != nil {
		return r, err
	}
	r.Status, r.Error, r.Steps, r.Report, r.Provider = done.Status, done.Error, done.Steps, done.Report, e.Stats()
	if err := r.Outage.fill(ctx, e); err != nil {
		return r, err
	}
	r.Ledger, err = ReadLedger(ctx, e.Pool, []int64{run.ID}, e.Calls())
	return r, err
}

// newOutageEnv is newEnv on a breaker of the model that no earlier
// scenario left counting.
func newOutageEnv(ctx context.Context, o EnvOptions, pageSize int, brain func(*pages) openaifake.Brain) (*Env, error) {
	if o.ProviderName == ProviderBedrock {
		return nil, fmt.Errorf("providerbench: the outage switch is the OpenAI-compatible fake's")
	}
	if _, err := o.Pool.Exec(ctx, `DELETE FROM gb_provider_breakers WHERE key = $1`, o.modelName()); err != nil {
		return nil, fmt.Errorf("error clearing the breaker: %w", err)
	}
	return newEnv(ctx, o, pageSize, brain)
}

// OutageTreesOptions size trees against a rate limit that meet an outage.
type OutageTreesOptions struct {
	RateOptions
	Outage Outage
}

// OutageTreesResult is what the trees did through the outage.
type OutageTreesResult struct {
	RateResult
	Outage OutageFigures
	// MinuteThroughput is the calls billed in the minute after the
	// outage as a share of the RPM limit.
	MinuteThroughput float64
}

// OutageTrees starts the trees at once against the rate limit, with the
// outage in the middle (AfterCalls: a third of their calls by default),
// and waits for them all.
func OutageTrees(ctx context.Context, o OutageTreesOptions) (OutageTreesResult, error) {
	o.Trees = cmp.Or(o.Trees, 30)
	o.SubSteps = cmp.Or(o.SubSteps, 1)
	o.Latency = cmp.Or(o.Latency, 200*time.Millisecond)
	o.Outage.Mode = cmp.Or(o.Outage.Mode, fakeprovider.OutageUnavailable)
	o.Outage.AfterCalls = cmp.Or(o.Outage.AfterCalls, o.Trees*(3+SubagentsPerTree*(o.SubSteps+1))/3)
	o.Provider.RPM, o.Provider.TPM, o.Provider.Latency = o.RPM, o.TPM, o.Latency
	e, err := newOutageEnv(ctx, o.EnvOptions, cmp.Or(o.PageSize, 2000),
		func(p *pages) openaifake.Brain { return treeBrain(p, o.SubSteps) })
	if err != nil {
		return OutageTreesResult{}, err
	}
	defer e.Close()
	began := time.Now()
	roots, err := startTrees(ctx, e, o.Trees)
	if err != nil {
		return OutageTreesResult{}, err
	}
	wait := watchOutage(ctx, e, o.Outage, func() int64 { return roots[len(roots)-1] })
	if err := e.Wait(ctx, roots...); err != nil {
		return OutageTreesResult{}, err
	}
	r := OutageTreesResult{RateResult: RateResult{Elapsed: time.Since(began), Provider: e.Stats()}}
	if r.Outage, err = wait(); err != nil {
		return r, err
	}
	r.PeakInFlight = r.Provider.MaxInFlight
	r.Refused = r.Provider.Refused429RPM + r.Provider.Refused429TPM + r.Provider.TooLarge
	r.Share = float64(r.Refused) / float64(max(r.Provider.Requests, 1))
	if err := r.Outage.fill(ctx, e); err != nil {
		return r, err
	}
	if o.RPM > 0 {
		r.MinuteThroughput = float64(r.Outage.MinuteBilled) / float64(o.RPM)
	}
	if err := outcomes(ctx, e, roots, &r.Runs, &r.Succeeded, &r.Errors); err != nil {
		return r, err
	}
	r.Ledger, err = ReadLedger(ctx, e.Pool, roots, e.Calls())
	return r, err
}

// startTrees starts n trees, each for a user of its own (a user may have
// only a few researches working at once), and returns their roots.
func startTrees(ctx context.Context, e *Env, n int) ([]int64, error) {
	var roots []int64
	for i := range n {
		user, err := e.NewUser(ctx)
		if err != nil {
			return nil, err
		}
		run, err := e.Start(ctx, jobs.StartParams{UserID: user, Topic: fmt.Sprintf("tree %d", i+1), MaxSteps: 4})
		if err != nil {
			return nil, err
		}
		roots = append(roots, run.ID)
	}
	return roots, nil
}

// String is the figures in a line.
func (f OutageFigures) String() string {
	return fmt.Sprintf("outage %s for %s: %d requests while down (%d probes); first answer %s after; "+
		"%d requests after, %d refused 429 (%.1f%%); %d billed in the minute after; states seen %s",
		f.Mode, f.Ended.Sub(f.Began).Round(time.Second), f.DuringOutage, f.Probes, f.FirstAnswer.Round(time.Millisecond),
		f.After, f.Refused429, 100*f.Share429, f.MinuteBilled, strings.Join(f.States, ","))
}
