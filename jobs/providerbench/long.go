package providerbench

import (
	"context"
	"fmt"
	"regexp"

	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/cite"
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
	// QuoteInView makes the research's writer one that quotes, for its
	// report, only what is still in its prompt (inViewBrain), and checks
	// the report's citations (flag).
	QuoteInView bool
	// PagesPerStep is how many pages a step of that writer fetches
	// (default 1).
	PagesPerStep int
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
	// Citations are the counts of gb's check of the report's citations
	// against what the research read (with QuoteInView).
	Citations *cite.Counts
	// Seen is what the requests showed of the results before them (with
	// QuoteInView).
	Seen Seen
}

// Seen is what the requests of a research showed of the results before
// them.
type Seen struct {
	// UnseenStubbed counts results sent as a stub in the first request
	// after their step, before the model saw them.
	UnseenStubbed int
	// Returned counts results sent whole after a request had stubbed them.
	Returned int
	// Several counts the requests after a step of several results, and
	// AllWhole those of them that held all of the step's results whole.
	Several, AllWhole int
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
	brain := readingBrain
	var w *watch
	params := jobs.StartParams{Topic: "tidal stream output, page by page", MaxSteps: o.Steps}
	if o.QuoteInView {
		w = &watch{}
		brain = inViewBrain(max(o.PagesPerStep, 1), w)
		params.Citations = jobs.CitationsFlag
	}
	e, err := newEnv(ctx, o.EnvOptions, o.PageSize, brain)
	if err != nil {
		return LongResult{}, err
	}
	defer e.Close()
	run, err := e.Start(ctx, params)
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
		Cited: len(reportPage.FindAllString(done.Report, -1)), Citations: done.Citations}
	if w != nil {
		r.Seen = Seen{UnseenStubbed: w.UnseenStubbed, Returned: w.Returned, Several: w.Several, AllWhole: w.AllWhole}
	}
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
