package jobs

import (
	"github.com/gbresearch/gb/jobs/compact"
	"github.com/gbresearch/gb/jobs/llm"
)

// PromptBudgetDefault caps the prompt a step sends, however large its
// model's window: past it, old tool results are replaced by stubs that
// say how to get them back (jobs/compact). A long research then costs a
// few times what it reads rather than twenty.
const PromptBudgetDefault = 40_000

// compact fits a request in its model's window (0: none) and its token
// rate limit (tpm, 0: none) at level (how often the provider said such a
// request did not fit), counting ratio provider tokens for each of gb's
// own: it returns the request to send and whether it fits at all, and what
// the compaction did (nil: nothing). The rate limit counts a request's
// prompt and its completion cap as the window does, so the request is
// fitted to the smaller of the two: it never exceeds the TPM.
func (a *Service) compact(run *Run, req llm.Request, window, tpm, level int, ratio float64) (llm.Request, bool, *Compaction) {
	window = compactionWindow(window, tpm)
	if window <= 0 {
		return req, true, nil
	}
	cfg := compact.Config{Window: window, MaxBudget: a.limitsFor(run).PromptBudget, Scale: ratio}
	res := compact.Fit(req, cfg, level)
	return res.Request, res.Fits, compactionOf(req, res, level)
}

// compactionWindow is the size a request is fitted to: the smaller of
// the model's window and its tokens per minute, either 0 for none.
func compactionWindow(window, tpm int) int {
	if tpm > 0 && (window <= 0 || tpm < window) {
		return tpm
	}
	return window
}
