package openai

import (
	"bytes"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/llm"
)

func ptr[T any](v T) *T { return &v }

// profileOf makes a Model for cfg (no server needed) and returns its
// profile.
func profileOf(t *testing.T, cfg Config) llm.Profile {
	t.Helper()
	cfg.APIKey = testKey
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return mustNew(t, cfg).Profile()
}

func TestProfiles(t *testing.T) {
	gpt4o, _ := PriceOf("gpt-4o")
	cases := []struct {
		name string
		cfg  Config
		want llm.Profile
	}{
		{"table model", Config{Model: "gpt-4o"},
			llm.Profile{ContextWindow: 128000, StepCap: 1024, ReportCap: 4096, Price: gpt4o, Priced: true}},
		{"dated snapshot", Config{Model: "gpt-4.1-2025-04-14"},
			llm.Profile{ContextWindow: 1047576, StepCap: 1024, ReportCap: 4096, Price: prices["gpt-4.1"], Priced: true}},
		// Reasoning: room for thinking added to both caps, by effort.
		{"reasoning, default effort", Config{Model: "o3"},
			llm.Profile{ContextWindow: 200000, StepCap: 1024 + 4096, ReportCap: 4096 + 4096, Reasoning: true, Price: prices["o3"], Priced: true}},
		{"reasoning, high effort", Config{Model: "gpt-5-nano", ReasoningEffort: EffortHigh},
			llm.Profile{ContextWindow: 272000, StepCap: 1024 + 16384, ReportCap: 4096 + 16384, Reasoning: true, Price: prices["gpt-5-nano"], Priced: true}},
		{"reasoning, minimal effort", Config{Model: "gpt-5-mini", ReasoningEffort: EffortMinimal},
			llm.Profile{ContextWindow: 272000, StepCap: 1024 + 1024, ReportCap: 4096 + 1024, Reasoning: true, Price: prices["gpt-5-mini"], Priced: true}},
		// Unknown: the default window; an unknown reasoning model's caps are
		// held to half of it.
		{"unknown model", Config{Model: "local-model"},
			llm.Profile{ContextWindow: 16384, StepCap: 1024, ReportCap: 4096}},
		{"unknown reasoning model", Config{Model: "o9-preview", ReasoningEffort: EffortHigh},
			llm.Profile{ContextWindow: 16384, StepCap: 8192, ReportCap: 8192, Reasoning: true}},
		// Overrides: everything, or one field over the table.
		{"override all", Config{Model: "my-model", Profiles: map[string]ProfileOverride{"my-model": {
			ContextWindow: 32768, StepCap: 800, ReportCap: 3000, Reasoning: ptr(false),
			Input: ptr(0.5), CachedInput: ptr(0.25), Output: ptr(1.5)}}},
			llm.Profile{ContextWindow: 32768, StepCap: 800, ReportCap: 3000,
				Price: llm.Price{Input: 0.5, CachedInput: 0.25, Output: 1.5}, Priced: true}},
		{"override one field", Config{Model: "gpt-4o", Profiles: map[string]ProfileOverride{"gpt-4o": {StepCap: 2000}}},
			llm.Profile{ContextWindow: 128000, StepCap: 2000, ReportCap: 4096, Price: gpt4o, Priced: true}},
		{"override the cached price", Config{Model: "gpt-4o", Profiles: map[string]ProfileOverride{"gpt-4o": {CachedInput: ptr(1.0)}}},
			llm.Profile{ContextWindow: 128000, StepCap: 1024, ReportCap: 4096,
				Price: llm.Price{Input: 2.50, CachedInput: 1.0, Output: 10.00}, Priced: true}},
		{"unknown model priced, cached defaults to input", Config{Model: "local-model",
			Profiles: map[string]ProfileOverride{"local-model": {Input: ptr(0.0), Output: ptr(0.0)}}},
			llm.Profile{ContextWindow: 16384, StepCap: 1024, ReportCap: 4096, Priced: true}},
		{"reasoning declared", Config{Model: "deepseek-r1", Profiles: map[string]ProfileOverride{"deepseek-r1": {
			ContextWindow: 65536, Reasoning: ptr(true)}}},
			llm.Profile{ContextWindow: 65536, StepCap: 1024 + 4096, ReportCap: 4096 + 4096, Reasoning: true}},
		{"override for the base name of a snapshot", Config{Model: "gpt-4o-2024-08-06",
			Profiles: map[string]ProfileOverride{"gpt-4o": {ReportCap: 6000}}},
			llm.Profile{ContextWindow: 128000, StepCap: 1024, ReportCap: 6000, Price: gpt4o, Priced: true}},
	}
	for _, tc := range cases {
		if got := profileOf(t, tc.cfg); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestIsReasoningModel(t *testing.T) {
	for model, want := range map[string]bool{
		"o1": true, "o3": true, "o3-mini": true, "o4-mini-2025-04-16": true, "openai/o3": true,
		"gpt-5": true, "gpt-5-mini": true, "gpt-5-nano-2025-08-07": true, "GPT-5": true,
		"gpt-5-chat-latest": false, "gpt-4o": false, "gpt-4.1-mini": false, "omni-moderation": false, "local-model": false,
	} {
		if got := IsReasoningModel(model); got != want {
			t.Errorf("IsReasoningModel(%q) = %v, want %v", model, got, want)
		}
	}
}

// The example of the documentation parses; errors name the model and the
// field, and say what is allowed.
func TestParseProfiles(t *testing.T) {
	got, err := ParseProfiles(`{"my-model":{"context_window":32768,"step_cap":800,"report_cap":3000,"reasoning":false,
		"input":0.5,"cached_input":0.25,"output":1.5}}`)
	want := ProfileOverride{ContextWindow: 32768, StepCap: 800, ReportCap: 3000, Reasoning: ptr(false),
		Input: ptr(0.5), CachedInput: ptr(0.25), Output: ptr(1.5)}
	o := got["my-model"]
	if err != nil || len(got) != 1 || o.ContextWindow != want.ContextWindow || o.StepCap != want.StepCap ||
		o.ReportCap != want.ReportCap || *o.Reasoning || *o.Input != 0.5 || *o.CachedInput != 0.25 || *o.Output != 1.5 {
		t.Fatalf("ParseProfiles = %+v, %v", got, err)
	}
	if got, err := ParseProfiles("  "); got != nil || err != nil {
		t.Errorf("empty: %v, %v", got, err)
	}

	cases := []struct {
		json string
		says []string
	}{
		{`not json`, []string{"not a JSON object keyed by model name"}},
		{`["my-model"]`, []string{"not a JSON object keyed by model name"}},
		{`{"my-model":5}`, []string{`model "my-model"`, "JSON object"}},
		{`{"my-model":{"context_windw":1000}}`, []string{`model "my-model"`, `unknown field "context_windw"`, "allowed fields: context_window"}},
		{`{"my-model":{"step_cap":-5}}`, []string{`model "my-model"`, "step_cap -5 is negative", "whole number of tokens"}},
		{`{"my-model":{"context_window":-1}}`, []string{`model "my-model"`, "context_window -1 is negative"}},
		{`{"my-model":{"step_cap":"800"}}`, []string{`model "my-model"`, "step_cap must be a whole number of tokens, not a JSON string"}},
		{`{"my-model":{"step_cap":800.5}}`, []string{`model "my-model"`, "step_cap must be a whole number of tokens"}},
		{`{"my-model":{"reasoning":"yes"}}`, []string{`model "my-model"`, "reasoning must be true or false"}},
		{`{"my-model":{"input":-0.5,"output":1}}`, []string{`model "my-model"`, "input -0.5 is negative", "US dollars per million tokens"}},
		{`{"my-model":{"input":0.5,"cached_input":0.75,"output":1}}`, []string{`model "my-model"`, "cached_input 0.75 is more than input 0.5"}},
		{`{"gpt-4o":{"cached_input":3}}`, []string{`model "gpt-4o"`, "cached_input 3 is more than input 2.5"}},
		{`{"my-model":{"input":0.5}}`, []string{`model "my-model"`, "give both input and output"}},
		{`{"my-model":{"context_window":4096,"report_cap":4096}}`, []string{`model "my-model"`, "report_cap 4096 must be less than the context window, 4096"}},
		{`{"my-model":{"report_cap":20000}}`, []string{`model "my-model"`, "report_cap 20000 must be less than the context window, 16384", "set context_window"}},
		{`{"gpt-4o":{"step_cap":200000}}`, []string{`model "gpt-4o"`, "step_cap 200000 must be less than the context window, 128000"}},
		{`{"":{"step_cap":100}}`, []string{"model name is empty"}},
	}
	for _, tc := range cases {
		_, err := ParseProfiles(tc.json)
		if err == nil {
			t.Errorf("%s: no error", tc.json)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %q", tc.json, err, s)
			}
		}
	}
	// Every bad model is named, not only the first.
	_, err = ParseProfiles(`{"a":{"step_cap":-1},"b":{"report_cap":-1}}`)
	if err == nil || !strings.Contains(err.Error(), `model "a"`) || !strings.Contains(err.Error(), `model "b"`) {
		t.Errorf("two bad models: %v", err)
	}
}

// The environment's profiles and effort reach the Config, and their errors
// name the variable; New refuses the same mistakes in a Config.
func TestConfigFromEnvProfiles(t *testing.T) {
	env := map[string]string{
		EnvAPIKey:          testKey,
		EnvModel:           "my-model",
		EnvModelProfiles:   `{"my-model":{"context_window":32768,"reasoning":true}}`,
		EnvReasoningEffort: " High ",
	}
	cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil || cfg.ReasoningEffort != EffortHigh || cfg.Profiles["my-model"].ContextWindow != 32768 {
		t.Fatalf("ConfigFromEnv = %+v, %v", cfg, err)
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	// High effort: 1024 + 16384 for a step, held to half the window.
	if p := mustNew(t, cfg).Profile(); p.ContextWindow != 32768 || !p.Reasoning || p.StepCap != 16384 {
		t.Errorf("profile = %+v", p)
	}

	env[EnvModelProfiles] = `{"my-model":{"step_cap":-1}}`
	env[EnvReasoningEffort] = "extreme"
	_, err = ConfigFromEnv(func(k string) string { return env[k] })
	for _, s := range []string{EnvModelProfiles + `: model "my-model": step_cap -1`, EnvReasoningEffort + `: "extreme" must be minimal, low, medium or high`} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("error %v does not say %q", err, s)
		}
	}

	for _, bad := range []Config{
		{APIKey: "k", ReasoningEffort: "max"},
		{APIKey: "k", Profiles: map[string]ProfileOverride{"m": {ReportCap: -1}}},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%v): no error", bad)
		}
	}
}

// An unknown model is logged once, when the Model is made.
func TestUnknownModelLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	m := mustNew(t, Config{APIKey: testKey, Model: "local-model", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 3 {
		m.Profile()
		m.EstimateUsage(simpleRequest())
	}
	if n := strings.Count(logs.String(), "not in the profile table"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
	logs.Reset()
	mustNew(t, Config{APIKey: testKey, Model: "gpt-4o-mini", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if logs.Len() != 0 {
		t.Errorf("a known model logged:\n%s", logs.String())
	}
}

// EstimateUsage: the estimated prompt, none of it cached, and the whole cap,
// at the uncached rate.
func TestEstimateUsage(t *testing.T) {
	req := toolRequest()
	req.MaxCompletionTokens = 1000
	prompt := llm.EstimatePromptTokens(req)
	m := mustNew(t, Config{APIKey: testKey, Model: "gpt-4.1", Logger: slog.New(slog.DiscardHandler)})
	u := m.EstimateUsage(req)
	// gpt-4.1: prompt × 2.00 + 1,000 × 8.00, per million tokens.
	want := (float64(prompt)*2.00 + 1000*8.00) / 1e6
	if u.PromptTokens != prompt || u.CachedPromptTokens != 0 || u.CompletionTokens != 1000 || math.Abs(u.CostUSD-want) > 1e-12 {
		t.Errorf("EstimateUsage = %+v, want %d prompt, 1000 completion, $%v", u, prompt, want)
	}
	unknown := mustNew(t, Config{APIKey: testKey, Model: "local-model", Logger: slog.New(slog.DiscardHandler)})
	if u := unknown.EstimateUsage(req); u.CostUSD != 0 || u.CompletionTokens != 1000 {
		t.Errorf("unknown model: %+v", u)
	}
}
