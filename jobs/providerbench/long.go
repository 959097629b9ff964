package providerbench

import (
	"context"
	"fmt"
	"regexp"

	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
)

// LongOptions size a long research.
type LongOptions struct {
	EnvOptions
	// Steps is the research's max_steps: it reads a page at each step but
	// the last, where it writes its report (default 40).
	Steps int
	// Window is the model's context window at the provider and in gb's
	// profile (default 128,000).
	Window int
	// PageSize is the characters of each page (PageSizeDefault).
	PageSize int
	// NoCompaction sends the whole conversation at every step, against a
	// window large enough to hold it (the baseline).
	NoCompaction bool
}

// LongResult is what a long research cost.
type LongResult struct {
	Status, Error string
	Steps         int
	// Cited counts the distinct pages the report cites.
	Cited int
	// PageTokens is what the pages it read count, by the provider's
	// tokenizer.
	PageTokens int
	// MaxPrompt is the largest prompt the provider was sent.
	MaxPrompt int
	Provider  openaifake.Stats
	Ledger    Ledger
}

var reportPage = regexp.MustCompile(`\[\d+\] http://127\.0\.0\.1:\d+/page/\d+`)

// LongResearch runs one research that reads a new page at every step.
func LongResearch(ctx context.Context, o LongOptions) (LongResult, error) {
	o.Steps = max(o.Steps, 2)
	if o.Window == 0 {
		o.Window = 128_000
	}
	if o.PageSize == 0 {
		o.PageSize = PageSizeDefault
	}
	model := o.modelName()
	window := o.Window
	if o.NoCompaction {
		window = 4_000_000
		o.Agent.PromptBudget = -1
	}
	spec := openaifake.DefaultModels()[model]
	spec.ContextWindow, spec.MaxCompletion = window, max(spec.MaxCompletion, 16_384)
	o.Provider.Models = map[string]openaifake.ModelSpec{model: spec}
	o.Profiles = map[string]openai.ProfileOverride{model: {ContextWindow: window}}
	e, err := newEnv(ctx, o.EnvOptions, o.PageSize, readingBrain)
	if err != nil {
		return LongResult{}, err
	}
	defer e.Close()
	run, err := e.Start(ctx, jobs.StartParams{Topic: "tidal stream output, page by page", MaxSteps: o.Steps})
	if err != nil {
		return LongResult{}, err
	}
	if err := e.Wait(ctx, run.ID); err != nil {
		return LongResult{}, err
	}
	done, err := jobs.GetRun(ctx, e.Pool, run.ID)
	if err != nil {
		return LongResult{}, err
	}
	r := LongResult{Status: done.Status, Error: done.Error, Steps: done.Steps, Provider: e.Stats(),
		Cited: len(reportPage.FindAllString(done.Report, -1))}
	for _, c := range e.Calls() {
		r.MaxPrompt = max(r.MaxPrompt, c.PromptTokens)
	}
	var fetched int
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM gb_sources WHERE run_id = $1 AND kind = 'fetch'`,
		run.ID).Scan(&fetched); err != nil {
		return r, fmt.Errorf("error counting the pages read: %w", err)
	}
	for i := 1; i <= fetched; i++ {
		r.PageTokens += openaifake.CountTokens(PageText(i, o.PageSize))
	}
	r.Ledger, err = ReadLedger(ctx, e.Pool, []int64{run.ID}, e.Calls())
	return r, err
}
