package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ProfileOverride describes a model, or corrects the table, for
// Config.Profiles and GB_MODEL_PROFILES. A zero or nil field keeps the
// default.
type ProfileOverride struct {
	// ContextWindow is the most tokens a request may hold, prompt and
	// completion cap together.
	ContextWindow int `json:"context_window,omitempty"`
	// StepCap and ReportCap are the completion caps sent, a reasoning
	// model's room for thinking included.
	StepCap   int `json:"step_cap,omitempty"`
	ReportCap int `json:"report_cap,omitempty"`
	// Reasoning says whether the model thinks before it answers (nil: by
	// its name, see IsReasoningModel).
	Reasoning *bool `json:"reasoning,omitempty"`
	// Input, CachedInput and Output are prices in US dollars per million
	// tokens. A model not in the price table needs Input and Output;
	// CachedInput then defaults to Input.
	Input       *float64 `json:"input,omitempty"`
	CachedInput *float64 `json:"cached_input,omitempty"`
	Output      *float64 `json:"output,omitempty"`
}

// overrideFields are the JSON fields of a ProfileOverride, for errors.
const overrideFields = "context_window, step_cap, report_cap (whole numbers of tokens), " +
	"reasoning (true or false), input, cached_input, output (US dollars per million tokens)"

// fieldKinds says what each field of a ProfileOverride takes, for errors.
var fieldKinds = map[string]string{
	"context_window": "a whole number of tokens",
	"step_cap":       "a whole number of tokens",
	"report_cap":     "a whole number of tokens",
	"reasoning":      "true or false",
	"input":          "a number of US dollars per million tokens",
	"cached_input":   "a number of US dollars per million tokens",
	"output":         "a number of US dollars per million tokens",
}

// ParseProfiles reads GB_MODEL_PROFILES: a JSON object keyed by model name,
// each value a ProfileOverride, e.g.
//
//	{"my-model":{"context_window":32768,"step_cap":800,"input":0.5,"output":1.5}}
//
// An empty string is no overrides. Errors name the model and the field and
// say what is allowed.
func ParseProfiles(s string) (map[string]ProfileOverride, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf(`not a JSON object keyed by model name, like {"my-model":{"context_window":32768}}: %w`, err)
	}
	out := make(map[string]ProfileOverride, len(raw))
	var errs []error
	for _, model := range slices.Sorted(maps.Keys(raw)) {
		o, err := decodeOverride(model, raw[model])
		if err == nil {
			err = validateOverride(model, o)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[model] = o
	}
	return out, errors.Join(errs...)
}

// decodeOverride reads one model's object, refusing unknown fields.
func decodeOverride(model string, raw json.RawMessage) (ProfileOverride, error) {
	var o ProfileOverride
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&o)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return o, nil
	case errors.As(err, &typeErr) && fieldKinds[typeErr.Field] != "":
		return o, fmt.Errorf("model %q: %s must be %s, not a JSON %s", model, typeErr.Field, fieldKinds[typeErr.Field], typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return o, fmt.Errorf("model %q: %s; allowed fields: %s", model, strings.TrimPrefix(err.Error(), "json: "), overrideFields)
	default:
		return o, fmt.Errorf("model %q: not a JSON object of %s: %w", model, overrideFields, err)
	}
}

// validateOverride checks one model's override: no negative number, caps
// inside the window, a usable price.
func validateOverride(model string, o ProfileOverride) error {
	if strings.TrimSpace(model) == "" {
		return errors.New("a model name is empty")
	}
	var errs []error
	for _, msg := range append(sizeProblems(model, o), priceProblems(model, o)...) {
		errs = append(errs, fmt.Errorf("model %q: %s", model, msg))
	}
	return errors.Join(errs...)
}

// sizeProblems says what is wrong with an override's window and caps.
func sizeProblems(model string, o ProfileOverride) []string {
	var out []string
	sizes := []struct {
		name string
		n    int
	}{{"context_window", o.ContextWindow}, {"step_cap", o.StepCap}, {"report_cap", o.ReportCap}}
	for _, f := range sizes {
		if f.n < 0 {
			out = append(out, fmt.Sprintf("%s %d is negative; it must be a whole number of tokens (0 or absent for the default)", f.name, f.n))
		}
	}
	window, _ := lookup(contextWindows, model)
	window = cmp.Or(o.ContextWindow, window, ContextWindowDefault)
	for _, f := range sizes[1:] {
		if f.n >= window {
			out = append(out, fmt.Sprintf("%s %d must be less than the context window, %d (set context_window if that is wrong)", f.name, f.n, window))
		}
	}
	return out
}

// priceProblems says what is wrong with an override's prices.
func priceProblems(model string, o ProfileOverride) []string {
	var out []string
	for _, f := range []struct {
		name string
		v    *float64
	}{{"input", o.Input}, {"cached_input", o.CachedInput}, {"output", o.Output}} {
		if f.v != nil && *f.v < 0 {
			out = append(out, fmt.Sprintf("%s %g is negative; it must be US dollars per million tokens, 0 or more", f.name, *f.v))
		}
	}
	anyPrice := o.Input != nil || o.CachedInput != nil || o.Output != nil
	if _, listed := PriceOf(model); !listed && anyPrice && (o.Input == nil || o.Output == nil) {
		out = append(out, "is not in the price table: give both input and output (cached_input defaults to input)")
	}
	if p, _ := priceFor(model, o); p.CachedInput > p.Input && (o.Input != nil || o.CachedInput != nil) {
		out = append(out, fmt.Sprintf("cached_input %g is more than input %g; a cached token never costs more", p.CachedInput, p.Input))
	}
	return out
}

// ParseReasoningEffort reads GB_REASONING_EFFORT: minimal, low, medium,
// high, or "" for none sent.
func ParseReasoningEffort(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "", EffortMinimal, EffortLow, EffortMedium, EffortHigh:
		return s, nil
	}
	return "", fmt.Errorf("%q must be minimal, low, medium or high (unset: the provider's default)", s)
}
