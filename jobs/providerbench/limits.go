package providerbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
)

// The scenarios of a provider smaller than gb believes: a window smaller
// than gb's profile (SmallWindow), a tokens-per-minute limit smaller than
// a long prompt (SmallTPM), and a configured rate limit removed while the
// provider's is higher (StaleLimit).

// NoteSize is the characters of each note the notes brain keeps: the
// notes are never compacted (they are in the model's own tool calls), so
// forty of them fill most of a 16k window.
const NoteSize = 250

// notesBrain reads a new page at every step and keeps a note of it
// (remember) in the same answer, then reports, citing the pages.
func notesBrain(p *pages) openaifake.Brain {
	return func(req *openaifake.Request) openaifake.Answer {
		if !mayCall(req) {
			return report(req, task(req))
		}
		k := turns(req) + 1
		a := fetchCall(fmt.Sprintf("call_read_%d", k), p.URL(k))
		note := fmt.Sprintf("Page %d (%s) says the tidal output rose. ", k, p.URL(k))
		note += strings.Repeat("Measured flow and turbine figures agree. ", (NoteSize-len(note))/41)
		a.ToolCalls = append(a.ToolCalls, openaifake.ToolCall{ID: fmt.Sprintf("call_note_%d", k), Name: "remember",
			Arguments: fmt.Sprintf(`{"title":"page %d","text":%q}`, k, note)})
		return a
	}
}

// WindowOptions size a research against a window smaller than gb knows.
type WindowOptions struct {
	EnvOptions
	// Steps is the research's max_steps (default 40).
	Steps int
	// Window is the provider's real window (default 16,000); Told is what
	// gb's profile says (default 128,000).
	Window, Told int
	// PageSize is the characters of each page (PageSizeDefault).
	PageSize int
}

// WindowResult is what the research did.
type WindowResult struct {
	Status, Error string
	Steps         int
	// Refused is the requests the provider refused as over its window;
	// Paid the calls it answered and billed.
	Refused, Paid int
	// Learned is the window gb keeps for the model (0: none).
	Learned int
	// MaxRequest is the largest prompt and completion cap the provider
	// answered; Cited the pages the report cites; ReportCap the completion
	// cap of the last call answered (the report's).
	MaxRequest, Cited, ReportCap int
	Provider                     openaifake.Stats
	Ledger                       Ledger
}

// SmallWindow runs one research that reads a page and keeps a note at
// every step, against a provider whose window is smaller than gb's
// profile says.
func SmallWindow(ctx context.Context, o WindowOptions) (WindowResult, error) {
	o.Steps = cmp.Or(o.Steps, 40)
	o.Window, o.Told = cmp.Or(o.Window, 16_000), cmp.Or(o.Told, 128_000)
	o.PageSize = cmp.Or(o.PageSize, PageSizeDefault)
	model := o.modelName()
	spec := openaifake.DefaultModels()[model]
	spec.ContextWindow = o.Window
	o.Provider.Models = map[string]openaifake.ModelSpec{model: spec}
	o.Profiles = map[string]openai.ProfileOverride{model: {ContextWindow: o.Told}}
	e, err := newEnv(ctx, o.EnvOptions, o.PageSize, notesBrain)
	if err != nil {
		return WindowResult{}, err
	}
	defer e.Close()
	run, err := e.Start(ctx, jobs.StartParams{Topic: "tidal stream output, page by page, with notes", MaxSteps: o.Steps})
	if err != nil {
		return WindowResult{}, err
	}
	if err := e.Wait(ctx, run.ID); err != nil {
		return WindowResult{}, err
	}
	done, err := jobs.GetRun(ctx, e.Pool, run.ID)
	if err != nil {
		return WindowResult{}, err
	}
	s := e.Stats()
	r := WindowResult{Status: done.Status, Error: done.Error, Steps: done.Steps, Refused: s.OverWindow, Paid: s.Billed,
		Provider: s, Cited: len(reportPage.FindAllString(done.Report, -1))}
	for _, c := range e.Calls() {
		r.MaxRequest = max(r.MaxRequest, c.PromptTokens+c.MaxCompletionTokens)
		r.ReportCap = c.MaxCompletionTokens
	}
	if r.Learned, err = learnedWindow(ctx, e); err != nil {
		return r, err
	}
	r.Ledger, err = ReadLedger(ctx, e.Pool, []int64{run.ID}, e.Calls())
	return r, err
}

// learnedWindow is the window gb keeps for the scenario's model (0: none).
func learnedWindow(ctx context.Context, e *Env) (int, error) {
	var n int
	err := e.Pool.QueryRow(ctx, `SELECT window_tokens FROM gb_model_windows WHERE model = $1`, e.Model).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("error reading the learned window: %w", err)
	}
	return n, nil
}

// TPMOptions size a research against a tokens-per-minute limit smaller
// than its prompts would be uncompacted.
type TPMOptions struct {
	EnvOptions
	// Steps is the research's max_steps (default 8).
	Steps int
	// TPM is the provider's tokens per minute (default 12,000), which gb
	// learns from its headers (no GB_RATE_LIMITS).
	TPM int
	// PageSize is the characters of each page (PageSizeDefault).
	PageSize int
}

// TPMResult is what the research did.
type TPMResult struct {
	Status, Error string
	Steps         int
	// TooLarge counts the provider's "Request too large" refusals, Limited
	// its other 429s.
	TooLarge, Limited int
	// MaxRequest is the largest prompt and completion cap the provider
	// answered.
	MaxRequest int
	Provider   openaifake.Stats
	Ledger     Ledger
}

// SmallTPM runs one research that reads a page at every step against a
// provider whose tokens-per-minute limit is smaller than the research's
// uncompacted prompts.
func SmallTPM(ctx context.Context, o TPMOptions) (TPMResult, error) {
	o.Steps = cmp.Or(o.Steps, 8)
	o.TPM = cmp.Or(o.TPM, 12_000)
	o.PageSize = cmp.Or(o.PageSize, PageSizeDefault)
	o.Provider.TPM = o.TPM
	e, err := newEnv(ctx, o.EnvOptions, o.PageSize, readingBrain)
	if err != nil {
		return TPMResult{}, err
	}
	defer e.Close()
	run, err := e.Start(ctx, jobs.StartParams{Topic: "tidal stream output, page by page", MaxSteps: o.Steps})
	if err != nil {
		return TPMResult{}, err
	}
	if err := e.Wait(ctx, run.ID); err != nil {
		return TPMResult{}, err
	}
	done, err := jobs.GetRun(ctx, e.Pool, run.ID)
	if err != nil {
		return TPMResult{}, err
	}
	s := e.Stats()
	r := TPMResult{Status: done.Status, Error: done.Error, Steps: done.Steps, TooLarge: s.TooLarge,
		Limited: s.Refused429RPM + s.Refused429TPM, Provider: s}
	for _, c := range e.Calls() {
		r.MaxRequest = max(r.MaxRequest, c.PromptTokens+c.MaxCompletionTokens)
	}
	r.Ledger, err = ReadLedger(ctx, e.Pool, []int64{run.ID}, e.Calls())
	return r, err
}

// StaleOptions size the trees run after a configured limit is removed.
type StaleOptions struct {
	RateOptions
	// Configured is the RPM GB_RATE_LIMITS said before it was removed
	// (default a third of RPM).
	Configured int
}

// StaleLimit starts workers configured with a limit lower than the
// provider's (GB_RATE_LIMITS), stops them, then runs RateLimits with the
// configuration removed: the provider's headers should govern.
func StaleLimit(ctx context.Context, o StaleOptions) (RateResult, error) {
	o.RPM = cmp.Or(o.RPM, 120)
	o.Configured = cmp.Or(o.Configured, o.RPM/3)
	before := o.EnvOptions
	before.Agent.RateLimits = map[string]jobs.RateLimit{o.modelName(): {RPM: o.Configured}}
	e, err := newEnv(ctx, before, 2000, readingBrain) // its workers write the configured limit
	if err != nil {
		return RateResult{}, err
	}
	e.Close()
	o.Agent.RateLimits = nil
	return RateLimits(ctx, o.RateOptions)
}
