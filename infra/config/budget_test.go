package config

import (
	"strings"
	"testing"
)

// GB_MAX_COST_USD on a model gb has no price for is a startup error that
// names the model and GB_MODEL_PROFILES; a price given there, a listed
// model, the offline policy and a token budget are accepted.
func TestDollarBudgetNeedsAPricedModel(t *testing.T) {
	t.Parallel()
	base := map[string]string{EnvDatabaseURL: "postgres://x", EnvOpenAIKey: "sk-x", EnvMaxCostUSD: "0.5"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	_, err := FromEnv(env(with(map[string]string{EnvModel: "my-model"})))
	if err == nil || !strings.Contains(err.Error(), EnvMaxCostUSD) || !strings.Contains(err.Error(), "my-model") ||
		!strings.Contains(err.Error(), EnvModelProfiles) {
		t.Fatalf("GB_MAX_COST_USD on an unpriced model: %v, want an error naming the model and %s", err, EnvModelProfiles)
	}
	_, err = FromEnv(env(with(map[string]string{EnvModels: "gpt-4o-mini,my-model"})))
	if err == nil || !strings.Contains(err.Error(), "my-model") {
		t.Errorf("an unpriced model a sub-agent may be given: %v, want it named", err)
	}
	for name, extra := range map[string]map[string]string{
		"priced in GB_MODEL_PROFILES": {EnvModel: "my-model", EnvModelProfiles: `{"my-model":{"input":0.5,"output":1.5}}`},
		"a listed model":              {EnvModel: "gpt-4o-mini"},
		"the offline policy":          {EnvOpenAIKey: ""},
		"a token budget":              {EnvModel: "my-model", EnvMaxCostUSD: "", EnvMaxTokens: "100000"},
		"bedrock, listed":             {EnvModelProvider: "bedrock", EnvBedrockRegion: "us-east-1", EnvOpenAIKey: ""},
	} {
		if _, err := FromEnv(env(with(extra))); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = FromEnv(env(with(map[string]string{EnvModelProvider: "bedrock", EnvBedrockRegion: "us-east-1",
		EnvModel: "cohere.command-r-v1:0"})))
	if err == nil || !strings.Contains(err.Error(), "cohere.command-r-v1:0") {
		t.Errorf("bedrock, unlisted: %v, want the model named", err)
	}
}
