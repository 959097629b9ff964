package providerbench

import (
	"cmp"
	"context"
	"errors"

	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
)

// OddOptions say which odd answer a research meets, and how often.
type OddOptions struct {
	EnvOptions
	// Fault is the provider's misbehaviour.
	Fault openaifake.Fault
	// Times is how many answers in a row have it (default 1).
	Times int
	// Steps is the research's max_steps (default 4).
	Steps int
}

// OddResult is how a research that met an odd answer ended.
type OddResult struct {
	Status, Error string
	Steps         int
	Report        string
	Provider      openaifake.Stats
	Ledger        Ledger
}

// OddAnswer runs one research that reads a page at every step, whose
// first calls get an odd answer from the provider.
func OddAnswer(ctx context.Context, o OddOptions) (OddResult, error) {
	if o.ProviderName == ProviderBedrock {
		return OddResult{}, errors.New("providerbench: the odd answers are the OpenAI-compatible fake's faults")
	}
	e, err := newEnv(ctx, o.EnvOptions, 2000, readingBrain)
	if err != nil {
		return OddResult{}, err
	}
	defer e.Close()
	e.Fake.Inject(o.Fault, max(o.Times, 1))
	run, err := e.Start(ctx, jobs.StartParams{Topic: "tidal stream output", MaxSteps: cmp.Or(o.Steps, 4)})
	if err != nil {
		return OddResult{}, err
	}
	if err := e.Wait(ctx, run.ID); err != nil {
		return OddResult{}, err
	}
	done, err := jobs.GetRun(ctx, e.Pool, run.ID)
	if err != nil {
		return OddResult{}, err
	}
	r := OddResult{Status: done.Status, Error: done.Error, Steps: done.Steps, Report: done.Report, Provider: e.Fake.Stats()}
	r.Ledger, err = ReadLedger(ctx, e.Pool, []int64{run.ID}, e.Fake.Calls())
	return r, err
}
