package openai

import (
	"regexp"
	"strings"

	"github.com/gbresearch/gb/jobs/llm"
)

// Defaults of a model's profile.
const (
	// ContextWindowDefault is the window assumed for a model that is neither
	// in the table nor described by Config.Profiles: small enough for any
	// model worth running an agent on.
	ContextWindowDefault = 16384
	// StepCapDefault is the completion cap of a call that may call tools:
	// a tool call or a short answer.
	StepCapDefault = 1024
	// ReportCapDefault is the completion cap of a call that writes a report.
	ReportCapDefault = 4096
	// ReasoningRoomDefault is the room for thinking added to both caps of a
	// reasoning model at the provider's default (medium) effort.
	ReasoningRoomDefault = 4096
)

// Reasoning efforts accepted by GB_REASONING_EFFORT and
// Config.ReasoningEffort ("" sends none: the provider's default, medium).
const (
	EffortMinimal = "minimal"
	EffortLow     = "low"
	EffortMedium  = "medium"
	EffortHigh    = "high"
)

// reasoningRoom is the room for thinking added to the caps at each effort.
var reasoningRoom = map[string]int{
	"":            ReasoningRoomDefault,
	EffortMinimal: 1024,
	EffortLow:     2048,
	EffortMedium:  ReasoningRoomDefault,
	EffortHigh:    16384,
}

// contextWindows are the most tokens a request may hold, prompt and
// completion cap together, read on 2026-12-02 (the pages show no date):
//   - gpt-4o, gpt-4o-mini: 128,000 (https://vercel.com/ai-gateway/models/gpt-4o-mini-fast.md,
//     which points to https://platform.openai.com/docs/models/gpt-4o-mini).
//   - gpt-4.1 family: 1,047,576 (OpenAI's page
//     https://developers.openai.com/ko-KR/api/docs/models/gpt-4.1-nano).
//   - o3, o3-mini, o4-mini: 200,000 with 100,000 of output at most
//     (https://vercel.com/ai-gateway/models/o4-mini.md, https://llmcalc.app/models/o3-mini).
//   - gpt-5 family: 400,000 in all but at most 272,000 of input (OpenAI's
//     page https://developers.openai.com/api/docs/models/gpt-5-nano.md). The
//     window here is 272,000 so that a prompt that fits with its cap also
//     fits the input limit.
var contextWindows = map[string]int{
	"gpt-4o":       128000,
	"gpt-4o-mini":  128000,
	"gpt-4.1":      1047576,
	"gpt-4.1-mini": 1047576,
	"gpt-4.1-nano": 1047576,
	"o3":           200000,
	"o3-mini":      200000,
	"o4-mini":      200000,
	"gpt-5":        272000,
	"gpt-5-mini":   272000,
	"gpt-5-nano":   272000,
}

// oSeries matches OpenAI's reasoning models named o1, o3-mini, o4-mini...
var oSeries = regexp.MustCompile(`^o\d`)

// IsReasoningModel reports whether a model name is one of OpenAI's
// reasoning models: the o-series and the GPT-5 family (but not its chat
// variants, as gpt-5-chat-latest). A provider prefix (openai/o3) is ignored.
func IsReasoningModel(model string) bool {
	name := strings.ToLower(model)
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	switch {
	case oSeries.MatchString(name):
		return true
	case strings.HasPrefix(name, "gpt-5"):
		return !strings.Contains(name, "-chat")
	}
	return false
}

// lookup finds a model's entry by exact name or by the name without the
// date of its snapshot.
func lookup[V any](table map[string]V, model string) (V, bool) {
	if v, ok := table[model]; ok {
		return v, true
	}
	v, ok := table[baseName(model)]
	return v, ok
}

// ProfileOf is the profile a model has with profiles (GB_MODEL_PROFILES)
// and a reasoning effort, without a client: what a process that only
// starts researches needs to check a budget.
func ProfileOf(model string, profiles map[string]ProfileOverride, effort string) llm.Profile {
	p, _ := profileFor(model, overrideOf(profiles, model), effort)
	return p
}

// overrideOf is a model's entry of profiles, by its name or by its name
// without the date of its snapshot.
func overrideOf(profiles map[string]ProfileOverride, model string) ProfileOverride {
	if o, ok := profiles[model]; ok {
		return o
	}
	return profiles[baseName(model)]
}

// profileFor is the profile of a model: the table's, then o's fields over
// it. known is false when the context window is a guess.
func profileFor(model string, o ProfileOverride, effort string) (p llm.Profile, known bool) {
	window, known := lookup(contextWindows, model)
	if o.ContextWindow > 0 {
		window, known = o.ContextWindow, true
	}
	if !known {
		window = ContextWindowDefault
	}
	p.ContextWindow = window
	p.Reasoning = IsReasoningModel(model)
	if o.Reasoning != nil {
		p.Reasoning = *o.Reasoning
	}
	room := 0
	if p.Reasoning {
		room = reasoningRoom[effort]
	}
	p.StepCap = capOr(o.StepCap, StepCapDefault+room, window)
	p.ReportCap = capOr(o.ReportCap, ReportCapDefault+room, window)
	p.Price, p.Priced = priceFor(model, o)
	return p, known
}

// capOr is the configured cap, or the default one held to half the window
// so that a small window keeps room for the prompt.
func capOr(configured, def, window int) int {
	if configured > 0 {
		return configured
	}
	return min(def, window/2)
}

// priceFor is the table's price with the override's fields over it. A
// model not in the table is priced only when the override gives both its
// input and output prices (validateOverride checks that).
func priceFor(model string, o ProfileOverride) (llm.Price, bool) {
	p, ok := PriceOf(model)
	if o.Input == nil && o.CachedInput == nil && o.Output == nil {
		return p, ok
	}
	if o.Input != nil {
		p.Input = *o.Input
		if !ok && o.CachedInput == nil {
			p.CachedInput = p.Input
		}
	}
	if o.CachedInput != nil {
		p.CachedInput = *o.CachedInput
	}
	if o.Output != nil {
		p.Output = *o.Output
	}
	return p, ok || (o.Input != nil && o.Output != nil)
}
