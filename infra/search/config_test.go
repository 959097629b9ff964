package search

import (
	"fmt"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		name string // the provider built; "" for none
	}{
		{map[string]string{}, ""},
		{map[string]string{EnvProvider: "searxng", EnvURL: "http://127.0.0.1:8888"}, SearXNG},
		{map[string]string{EnvProvider: "Brave", EnvAPIKey: "k"}, Brave},
		{map[string]string{EnvProvider: "tavily", EnvAPIKey: "tvly-k"}, Tavily},
		{map[string]string{EnvProvider: "openai", EnvOpenAIAPIKey: "sk", EnvModel: "gpt-4o-search-preview"}, OpenAI},
		{map[string]string{EnvProvider: "openai", EnvAPIKey: "sk", EnvOpenAIBaseURL: "http://127.0.0.1:9/v1"}, OpenAI},
	} {
		s, err := FromEnv(env(c.env))
		switch {
		case err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.name == "" && s != nil:
			t.Errorf("%v: built %s, want none", c.env, s.Name())
		case c.name != "" && (s == nil || s.Name() != c.name):
			t.Errorf("%v: built %v, want %s", c.env, s, c.name)
		}
	}
	s, _ := FromEnv(env(map[string]string{EnvProvider: "openai", EnvOpenAIAPIKey: "sk", EnvModel: "gpt-4o-search-preview"}))
	if m := s.(*OpenAIClient).Model(); m != "gpt-4o-search-preview" {
		t.Errorf("model %q", m)
	}
}

// TestFromEnvRejectsBadConfig: each bad or half-set configuration is an
// error naming the variable and what it allows, and never the key.
func TestFromEnvRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{EnvProvider: "google"}, []string{`GB_SEARCH_PROVIDER="google"`, "searxng, brave, tavily or openai"}},
		{map[string]string{EnvAPIKey: "secret-key"}, []string{"GB_SEARCH_API_KEY is set but GB_SEARCH_PROVIDER is empty"}},
		{map[string]string{EnvURL: "http://x"}, []string{"GB_SEARCH_URL is set but GB_SEARCH_PROVIDER is empty"}},
		{map[string]string{EnvProvider: "searxng"}, []string{"GB_SEARCH_URL is required with GB_SEARCH_PROVIDER=searxng"}},
		{map[string]string{EnvProvider: "searxng", EnvURL: "localhost:8888"}, []string{"GB_SEARCH_URL", "http or https"}},
		{map[string]string{EnvProvider: "searxng", EnvURL: "http://x", EnvAPIKey: "secret-key"}, []string{"GB_SEARCH_API_KEY is set but searxng takes no key"}},
		{map[string]string{EnvProvider: "brave"}, []string{"GB_SEARCH_API_KEY is required with GB_SEARCH_PROVIDER=brave"}},
		{map[string]string{EnvProvider: "tavily", EnvModel: "m", EnvAPIKey: "secret-key"}, []string{"GB_SEARCH_MODEL is set but only GB_SEARCH_PROVIDER=openai"}},
		{map[string]string{EnvProvider: "openai"}, []string{"OPENAI_API_KEY (or GB_SEARCH_API_KEY) is required"}},
	} {
		s, err := FromEnv(env(c.env))
		if err == nil {
			t.Errorf("%v: built %v, want an error", c.env, s)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q lacks %q", c.env, err, w)
			}
		}
		if strings.Contains(err.Error(), "secret-key") {
			t.Errorf("%v: the error holds the key: %v", c.env, err)
		}
	}
}

func TestConfigHidesKey(t *testing.T) {
	c := ConfigFromEnv(env(map[string]string{EnvProvider: "brave", EnvAPIKey: "secret-key"}))
	for _, s := range []string{c.String(), fmt.Sprintf("%v %+v %#v", c, c, c), c.LogValue().String()} {
		if strings.Contains(s, "secret-key") || !strings.Contains(s, "(set)") {
			t.Errorf("%q", s)
		}
	}
}

// TestFromEnvURLOverride: GB_SEARCH_URL points a provider at another
// endpoint (the tests' fakes), with the key from the environment.
func TestFromEnvURLOverride(t *testing.T) {
	f := newFake(t, answer{body: bravePage})
	s, err := FromEnv(env(map[string]string{EnvProvider: "brave", EnvAPIKey: "BSA-env-key", EnvURL: f.srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	results, _, err := s.Search(t.Context(), "go", 1)
	reqs, _ := f.requests()
	if err != nil || len(results) != 1 || len(reqs) != 1 || reqs[0].Header.Get("X-Subscription-Token") != "BSA-env-key" {
		t.Errorf("results %+v, err %v, %d requests", results, err, len(reqs))
	}
}
