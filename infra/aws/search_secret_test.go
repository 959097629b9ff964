package aws_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/search"
)

// TestResolveSearchSecret: the worker reads the search provider's key from
// its secret; the other functions never read it; the openai provider
// falls back to the model's key.
func TestResolveSearchSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sm := &fakeSecrets{values: map[string]string{"arn:search": `{"api_key":"sk-search"}`, "arn:model": "sk-model"}}
	cfg := config.Config{DatabaseURL: "postgres://h/db", SearchSecretARN: "arn:search"}
	if err := gbaws.ResolveSecrets(ctx, sm, &cfg, false); err != nil || cfg.Search.APIKey != "" || len(sm.read) != 0 {
		t.Fatalf("a function that is not the worker read %v (key %q, %v)", sm.read, cfg.Search.APIKey, err)
	}
	if err := gbaws.ResolveSecrets(ctx, sm, &cfg, true); err != nil || cfg.Search.APIKey != "sk-search" {
		t.Fatalf("worker: key %q, %v", cfg.Search.APIKey, err)
	}
	cfg = config.Config{DatabaseURL: "postgres://h/db", OpenAISecretARN: "arn:model", Search: search.Config{Provider: search.OpenAI}}
	if err := gbaws.ResolveSecrets(ctx, sm, &cfg, true); err != nil || cfg.Search.APIKey != "sk-model" {
		t.Fatalf("openai search: key %q, %v", cfg.Search.APIKey, err)
	}
	cfg = config.Config{DatabaseURL: "postgres://h/db", SearchSecretARN: "arn:gone"}
	err := gbaws.ResolveSecrets(ctx, sm, &cfg, true)
	if err == nil || !strings.HasPrefix(err.Error(), config.EnvSearchSecretARN+": ") || strings.Contains(err.Error(), "sk-") {
		t.Fatalf("a missing secret: %v", err)
	}
	if !slices.Contains(sm.read, "arn:gone") {
		t.Fatalf("read %v", sm.read)
	}
}
