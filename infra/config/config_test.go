package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvValidates(t *testing.T) {
	t.Parallel()
	_, err := FromEnv(env(map[string]string{
		EnvDatabaseURL: "postgres://x", EnvStepTimeout: "forever", EnvMaxCostUSD: "-1",
		EnvDatabaseProxy: "maybe", EnvLogLevel: "loud", EnvMaxTokens: "lots",
	}))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *Error, got %v", err)
	}
	for _, name := range []string{EnvStepTimeout, EnvMaxCostUSD, EnvDatabaseProxy, EnvLogLevel, EnvMaxTokens} {
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
		EnvDatabaseProxy: "true", EnvOfflineDelay: "10ms",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.StepTimeout != 90*time.Second || c.MaxCostUSD != 0.5 || c.MaxTokens != 1000 || !c.DatabaseProxy {
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
