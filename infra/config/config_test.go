package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/jobs/llm"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvValidates(t *testing.T) {
	t.Parallel()
	_, err := FromEnv(env(map[string]string{
		EnvDatabaseURL: "postgres://x", EnvStepTimeout: "forever", EnvMaxCostUSD: "-1",
		EnvDatabaseProxy: "maybe", EnvLogLevel: "loud", EnvMaxTokens: "lots", EnvOutageHorizon: "1s",
	}))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *Error, got %v", err)
	}
	for _, name := range []string{EnvStepTimeout, EnvMaxCostUSD, EnvDatabaseProxy, EnvLogLevel, EnvMaxTokens, EnvOutageHorizon} {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
	if _, err := FromEnv(env(nil)); err == nil || !strings.Contains(err.Error(), EnvDatabaseURL) {
		t.Errorf("missing database: %v", err)
	}
}

func TestFromEnvReadsSettingsAndPicksTheModel(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(map[string]string{
		EnvDatabaseURL: "postgres://x", EnvStepTimeout: "90s", EnvMaxCostUSD: "0.5", EnvMaxTokens: "1000",
		EnvDatabaseProxy: "true", EnvOfflineDelay: "10ms", EnvOutageHorizon: "30m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.StepTimeout != 90*time.Second || c.MaxCostUSD != 0.5 || c.MaxTokens != 1000 || !c.DatabaseProxy ||
		c.Agent().Outage.Horizon != 30*time.Minute {
		t.Fatalf("%+v", c)
	}
	m, err := c.NewModel(nil)
	if err != nil || !strings.Contains(m.Name(), "not a language model") {
		t.Fatalf("without a key the model must be offline: %v %v", m, err)
	}
	c.OpenAIKey = "sk-test"
	m, err = c.NewModel(nil)
	if err != nil || m.Name() != "gpt-4o-mini" {
		t.Fatalf("with a key: %v %v", m, err)
	}
}

func TestFromEnvChecksTheWebSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"GB_SEARCH_PROVIDER": "bing"}, "GB_SEARCH_PROVIDER"},
		{map[string]string{"GB_SEARCH_PROVIDER": "searxng"}, "GB_SEARCH_URL"},
		{map[string]string{"GB_SEARCH_PROVIDER": "brave"}, "GB_SEARCH_API_KEY"},
		{map[string]string{"GB_SEARCH_API_KEY": "k"}, "GB_SEARCH_PROVIDER"},
		{map[string]string{"GB_FETCH_ALLOW": "localhost"}, "GB_FETCH_ALLOW"},
	} {
		tc.env[EnvDatabaseURL] = "postgres://x"
		_, err := FromEnv(env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%v: error %v does not name %s", tc.env, err, tc.name)
		}
	}
	c, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", "GB_SEARCH_PROVIDER": "searxng",
		"GB_SEARCH_URL": "http://127.0.0.1:8888", "GB_FETCH_ALLOW": "127.0.0.1/32:18000-18999"}))
	if err != nil {
		t.Fatal(err)
	}
	s, f, err := c.NewWeb(nil)
	if err != nil || s == nil || f == nil {
		t.Fatalf("web tools not built: %v %v %v", s, f, err)
	}
	if s, f, err := (Config{}).NewWeb(nil); s != nil || f != nil || err != nil {
		t.Fatalf("no provider must mean no web tools: %v %v %v", s, f, err)
	}
}

func TestFromEnvReadsTheSubagentSwitchesAndTypes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.md"), []byte("---\nname: x\n---\nprompt"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvMaxSubagents: "11", EnvAgentTypesDir: dir}))
	if err == nil || !strings.Contains(err.Error(), EnvMaxSubagents+":") || !strings.Contains(err.Error(), EnvAgentTypesDir+": agent type "+dir+"/bad.md: description: is required") {
		t.Errorf("bad switches: %v", err)
	}
	c, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvMaxSubagents: "0"}))
	if err != nil || c.Agent().MaxSubagents == nil || *c.Agent().MaxSubagents != 0 || c.Types == nil {
		t.Fatalf("switches not read: %+v %v", c, err)
	}
}

func TestFromEnvReadsTheModelsAllowList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvModels: "a,b"}, "needs OPENAI_API_KEY"},
		{map[string]string{EnvModels: "a,,b", EnvOpenAIKey: "k"}, "each once"},
		{map[string]string{EnvModels: "a,a", EnvOpenAIKey: "k"}, "each once"},
		{map[string]string{EnvModels: "a,b", EnvOpenAIKey: "k", EnvModel: "b"}, `leave GB_MODEL unset or make it "a"`},
	} {
		tc.env[EnvDatabaseURL] = "postgres://x"
		if _, err := FromEnv(env(tc.env)); err == nil || !strings.Contains(err.Error(), EnvModels+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
		}
	}
	c, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvModels: "gpt-4o-mini, gpt-4o", EnvOpenAIKey: "k"}))
	if err != nil {
		t.Fatal(err)
	}
	models, err := c.NewModels(nil)
	if err != nil || len(models) != 2 || models[1].Name() != "gpt-4o" || c.Model != "gpt-4o-mini" {
		t.Fatalf("models %v (%v), default %q", models, err, c.Model)
	}
}

func TestFromEnvReadsTheWorkerSizes(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxWorkers != MaxWorkersDefault || c.DBPool != DBPoolDefault || c.Agent().MaxWorkers != MaxWorkersDefault {
		t.Fatalf("defaults: workers %d (agent %d), pool %d", c.MaxWorkers, c.Agent().MaxWorkers, c.DBPool)
	}
	for _, tc := range []struct {
		workers, pool string
		want          int
		wantPool      int32
	}{
		{"1", "2", 1, 2},
		{"10000", "1000", 10000, 1000},
		{"250", "40", 250, 40},
	} {
		c, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvMaxWorkers: tc.workers, EnvDBPool: tc.pool}))
		if err != nil || c.MaxWorkers != tc.want || c.Agent().MaxWorkers != tc.want || c.DBPool != tc.wantPool {
			t.Errorf("%s, %s: workers %d, pool %d, %v", tc.workers, tc.pool, c.MaxWorkers, c.DBPool, err)
		}
	}
}

func TestFromEnvRefusesBadWorkerSizes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, value, want string
	}{
		{EnvMaxWorkers, "0", "GB_MAX_WORKERS: 0 is out of range; it must be 1 to 10000"},
		{EnvMaxWorkers, "10001", "GB_MAX_WORKERS: 10001 is out of range; it must be 1 to 10000"},
		{EnvMaxWorkers, "-5", "GB_MAX_WORKERS: -5 is out of range"},
		{EnvMaxWorkers, "many", `GB_MAX_WORKERS: "many" is not a whole number; it must be 1 to 10000`},
		{EnvMaxWorkers, "2.5", `GB_MAX_WORKERS: "2.5" is not a whole number`},
		{EnvDBPool, "1", "GB_DB_POOL: 1 is out of range; it must be 2 to 1000"},
		{EnvDBPool, "1001", "GB_DB_POOL: 1001 is out of range; it must be 2 to 1000"},
		{EnvDBPool, "99999999999", "GB_DB_POOL: 99999999999 is out of range; it must be 2 to 1000"},
		{EnvDBPool, "99999999999999999999", "GB_DB_POOL: 99999999999999999999 is out of range"},
		{EnvDBPool, " 25", `GB_DB_POOL: " 25" is not a whole number; it must be 2 to 1000`},
	} {
		_, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", tc.name: tc.value}))
		var ce *Error
		if !errors.As(err, &ce) || ce.Var != tc.name || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
	_, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvMaxWorkers: "0", EnvDBPool: "0"}))
	if err == nil || !strings.Contains(err.Error(), EnvMaxWorkers+":") || !strings.Contains(err.Error(), EnvDBPool+":") {
		t.Errorf("both bad: %v", err)
	}
}

// GB_MODEL_PROFILES and GB_REASONING_EFFORT reach every model made, and
// their mistakes are named.
func TestFromEnvReadsTheModelTuning(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(map[string]string{
		EnvDatabaseURL: "postgres://x", EnvOpenAIKey: "sk-test", EnvModels: "my-model,o4-mini",
		openai.EnvModelProfiles:   `{"my-model":{"context_window":32768,"step_cap":800,"input":0.5,"output":1.5}}`,
		openai.EnvReasoningEffort: "low",
	}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.NewModel(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := m.(llm.Profiler).Profile()
	if m.Name() != "my-model" || p.ContextWindow != 32768 || p.StepCap != 800 || !p.Priced || p.Price.Output != 1.5 {
		t.Errorf("%s: profile %+v", m.Name(), p)
	}
	models, err := c.NewModels(nil)
	if err != nil || len(models) != 2 {
		t.Fatalf("models %v, %v", models, err)
	}
	// o4-mini at low effort: 1024 + 2048 for a step.
	if p := models[1].(llm.Profiler).Profile(); !p.Reasoning || p.StepCap != 1024+2048 {
		t.Errorf("o4-mini profile %+v", p)
	}

	_, err = FromEnv(env(map[string]string{
		EnvDatabaseURL:            "postgres://x",
		openai.EnvModelProfiles:   `{"my-model":{"step_cap":-1}}`,
		openai.EnvReasoningEffort: "max",
	}))
	for _, s := range []string{openai.EnvModelProfiles + `: model "my-model": step_cap -1 is negative`,
		openai.EnvReasoningEffort + `: "max" must be minimal, low, medium or high`} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("error %v does not say %q", err, s)
		}
	}
}

func TestRateLimitsAndPromptBudget(t *testing.T) {
	base := map[string]string{EnvDatabaseURL: "postgres://x"}
	get := func(extra map[string]string) func(string) string {
		return func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return base[k]
		}
	}
	c, err := FromEnv(get(map[string]string{
		EnvRateLimits:   `{"gpt-4o-mini": {"rpm": 60, "tpm": 40000}, "o4-mini": {"rpm": 40}}`,
		EnvPromptBudget: "32000"}))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Agent()
	if a.RateLimits["gpt-4o-mini"].TPM != 40000 || a.RateLimits["o4-mini"].RPM != 40 || a.PromptBudget != 32000 {
		t.Fatalf("agent config %+v", a)
	}
	for _, bad := range []map[string]string{
		{EnvRateLimits: `{"gpt-4o-mini": {"rpm": -1}}`},
		{EnvRateLimits: `{"gpt-4o-mini": {}}`},
		{EnvRateLimits: `{"gpt-4o-mini": {"rps": 3}}`},
		{EnvRateLimits: `[60]`},
		{EnvPromptBudget: "12"},
		{EnvPromptBudget: "lots"},
	} {
		_, err := FromEnv(get(bad))
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%v: %v, want a config error naming the variable", bad, err)
		}
	}
}

// GB_VERIFY_MODEL names a model the agent can call, or start-up says so.
func TestFromEnvChecksTheVerifyModel(t *testing.T) {
	t.Parallel()
	base := map[string]string{EnvDatabaseURL: "postgres://x", EnvOpenAIKey: "k", EnvModels: "gpt-4o-mini,gpt-4o"}
	for model, ok := range map[string]bool{"gpt-4o": true, "gpt-4o-mini": true, "gpt-5": false} {
		e := maps.Clone(base)
		e[EnvVerifyModel] = model
		_, err := FromEnv(env(e))
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), EnvVerifyModel+`: "gpt-5" is not a model the agent can call`) {
			t.Errorf("GB_VERIFY_MODEL=%s: %v", model, err)
		}
	}
}

// GB_CITATIONS_JUDGE is on, off or unset (on); anything else is refused,
// and off reaches the agent's config.
func TestFromEnvReadsTheCitationsJudge(t *testing.T) {
	t.Parallel()
	base := map[string]string{EnvDatabaseURL: "postgres://x", EnvOpenAIKey: "k"}
	for v, want := range map[string]bool{"": false, "on": false, "off": true} {
		e := maps.Clone(base)
		e[EnvCitationsJudge] = v
		c, err := FromEnv(env(e))
		if err != nil || c.Agent().JudgeOff != want {
			t.Errorf("GB_CITATIONS_JUDGE=%q: %v, JudgeOff %v; want %v", v, err, c.Agent().JudgeOff, want)
		}
	}
	e := maps.Clone(base)
	e[EnvCitationsJudge] = "maybe"
	if _, err := FromEnv(env(e)); err == nil || !strings.Contains(err.Error(), EnvCitationsJudge+`: "maybe" must be on or off`) {
		t.Errorf("GB_CITATIONS_JUDGE=maybe: %v, want an error naming it", err)
	}
}
