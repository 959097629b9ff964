package config

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/bedrock"
	"github.com/gbresearch/gb/infra/bedrock/conversefake"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs/llm"
)

// GB_MODEL_PROVIDER=bedrock makes every model a Bedrock model, needs no
// key, and names the model runs are recorded with; a provider that is
// neither is refused by name.
func TestFromEnvPicksTheBedrockProvider(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvModelProvider: "bedrock",
		EnvModels: "us.anthropic.claude-3-5-haiku-20241022-v1:0,amazon.nova-lite-v1:0", EnvBedrockRegion: "eu-west-1",
		bedrock.EnvEndpoint: "http://127.0.0.1:9"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelProvider != ProviderBedrock || c.BedrockRegion != "eu-west-1" || c.BedrockEndpoint != "http://127.0.0.1:9" ||
		c.ModelName() != "us.anthropic.claude-3-5-haiku-20241022-v1:0" {
		t.Fatalf("config %+v, model name %q", c, c.ModelName())
	}
	m, err := c.NewModel(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*bedrock.Model); !ok || m.Name() != "us.anthropic.claude-3-5-haiku-20241022-v1:0" {
		t.Fatalf("model %T %s", m, m.Name())
	}
	if p := m.(llm.Profiler).Profile(); p.ContextWindow != 200_000 || !p.Priced || p.Price.CacheWrite != 1.00 {
		t.Errorf("profile %+v", p)
	}
	models, err := c.NewModels(nil)
	if err != nil || len(models) != 2 || models[1].Name() != "amazon.nova-lite-v1:0" {
		t.Fatalf("models %v, %v", models, err)
	}
	if _, ok := models[1].(*bedrock.Model); !ok {
		t.Errorf("sub-agent model %T", models[1])
	}

	c, err = FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvModelProvider: "bedrock", EnvBedrockRegion: "us-east-1"}))
	if err != nil || c.ModelName() != bedrock.ModelDefault {
		t.Errorf("default Bedrock model %q, %v", c.ModelName(), err)
	}
	if c, _ := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x"})); c.ModelProvider != ProviderOpenAI || c.ModelName() != offline.Name {
		t.Errorf("unset provider: %q, model %q", c.ModelProvider, c.ModelName())
	}
	_, err = FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvModelProvider: "vertex"}))
	var ce *Error
	if !errors.As(err, &ce) || ce.Var != EnvModelProvider || !strings.Contains(err.Error(), "must be openai or bedrock") {
		t.Errorf("unknown provider: %v", err)
	}
}

// The settings alone reach Bedrock: the SDK's credentials from the
// environment, GB_BEDROCK_ENDPOINT and GB_BEDROCK_REGION, a request the
// Converse fake accepts as signed by them.
func TestBedrockModelFromTheEnvironmentCallsConverse(t *testing.T) {
	fake := conversefake.New(conversefake.Config{Region: "eu-west-1"})
	defer fake.Close()
	c := fake.Config()
	t.Setenv("AWS_ACCESS_KEY_ID", c.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", c.SecretAccessKey)
	t.Setenv("AWS_REGION", "us-east-1") // GB_BEDROCK_REGION wins
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	cfg, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvModelProvider: "bedrock",
		EnvBedrockRegion: "eu-west-1", bedrock.EnvEndpoint: fake.URL()}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := cfg.NewModel(nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}})
	if err != nil || resp.Message.Content != "ok" || fake.Stats().Billed != 1 {
		t.Fatalf("%+v, %v; stats %+v", resp, err, fake.Stats())
	}
}
