package bedrock

import (
	"cmp"

	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/jobs/llm"
)

// Defaults of a model the table does not know.
const (
	// ContextWindowDefault is the window assumed for an unknown model.
	ContextWindowDefault = 32_000
	// StepCapDefault and ReportCapDefault are the completion caps of a
	// call that may call tools and of one that writes a report.
	StepCapDefault   = 1024
	ReportCapDefault = 4096
)

// ProfileOf is the profile a model id has with profiles
// (GB_MODEL_PROFILES), without a client: what a process that only starts
// researches needs to check a budget.
func ProfileOf(id string, profiles map[string]openai.ProfileOverride) llm.Profile {
	p, _ := profileFor(id, overrideOf(profiles, id))
	return p
}

// overrideOf is a model's entry of profiles, by its id or by its
// foundation model's.
func overrideOf(profiles map[string]openai.ProfileOverride, id string) openai.ProfileOverride {
	if o, ok := profiles[id]; ok {
		return o
	}
	return profiles[FoundationModel(id)]
}

// profileFor is the profile of a model id: the table's, then o's fields
// over it. known is false when the window is a guess.
func profileFor(id string, o openai.ProfileOverride) (p llm.Profile, known bool) {
	s, known := specOf(id)
	window := s.window
	if o.ContextWindow > 0 {
		window, known = o.ContextWindow, true
	}
	if window == 0 {
		window = ContextWindowDefault
	}
	p.ContextWindow = window
	report := ReportCapDefault
	if s.maxOutput > 0 {
		report = min(report, s.maxOutput)
	}
	p.StepCap = capOr(o.StepCap, min(StepCapDefault, report), window)
	p.ReportCap = capOr(o.ReportCap, report, window)
	// An unknown model's output limit is not known either: no cap sent
	// passes the report cap, which every model takes.
	p.MaxCompletion = cmp.Or(s.maxOutput, max(p.StepCap, p.ReportCap))
	p.OutputBurndown = max(s.burndown, 1)
	p.Price, p.Priced = priceFor(s, s.window > 0, o)
	return p, known
}

// capOr is the configured cap, or def held to half the window.
func capOr(configured, def, window int) int {
	if configured > 0 {
		return configured
	}
	return min(def, window/2)
}

// priceFor is the table's price with the override's prices over it; a
// model not in the table is priced only when both input and output are
// given. An overridden input price moves the cache-write price with it,
// in the table's ratio (1.25 when unknown).
func priceFor(s spec, listed bool, o openai.ProfileOverride) (llm.Price, bool) {
	p := s.price
	if o.Input != nil {
		ratio := 1.25
		if listed && p.Input > 0 {
			ratio = p.CacheWrite / p.Input
		}
		p.Input, p.CacheWrite = *o.Input, *o.Input*ratio
		if !listed && o.CachedInput == nil {
			p.CachedInput = p.Input
		}
	}
	if o.CachedInput != nil {
		p.CachedInput = *o.CachedInput
	}
	if o.Output != nil {
		p.Output = *o.Output
	}
	return p, listed || (o.Input != nil && o.Output != nil)
}
