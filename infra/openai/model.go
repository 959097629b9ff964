package openai

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	oai "github.com/sashabaranov/go-openai"

	"github.com/gbresearch/gb/jobs/llm"
)

// Model is an llm.Model backed by a chat-completions endpoint. It is safe
// for concurrent use.
type Model struct {
	name    string
	key     string // kept only to clear it from error texts
	host    string // the endpoint's host and port, for traces
	port    int
	client  *oai.Client
	log     *slog.Logger
	profile llm.Profile
	effort  string
}

var (
	_ llm.Model    = (*Model)(nil)
	_ llm.Profiler = (*Model)(nil)
)

// New checks cfg, fills its defaults and returns the model. It fails when
// the API key is missing, the base URL is not an http(s) URL, or a profile
// or the reasoning effort is invalid. A model whose context window is not
// known is given ContextWindowDefault, and a warning is logged once.
func New(cfg Config) (*Model, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cc := oai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cc.HTTPClient = recordingDoer{client: cfg.HTTPClient}
	m := &Model{
		name:   cfg.Model,
		key:    cfg.APIKey,
		client: oai.NewClientWithConfig(cc),
		log:    cfg.Logger,
		effort: cfg.ReasoningEffort,
	}
	m.host, m.port = hostPort(cc.BaseURL)
	var known bool
	m.profile, known = profileFor(cfg.Model, overrideOf(cfg.Profiles, cfg.Model), cfg.ReasoningEffort)
	if !known || !m.profile.Priced {
		m.log.Warn("openai: model not in the profile table; describe it in "+EnvModelProfiles,
			slog.String("model", m.name), slog.Int("context_window", m.profile.ContextWindow),
			slog.Bool("context_window_known", known), slog.Bool("priced", m.profile.Priced))
	}
	return m, nil
}

// Name implements llm.Model: the configured model name.
func (m *Model) Name() string { return m.name }

// ServerAddress is the host and port of the endpoint the model calls: the
// server.address and server.port of its spans (jobs.GenAIServer).
func (m *Model) ServerAddress() (string, int) { return m.host, m.port }

// hostPort is the host of an http(s) URL and its port, given or implied.
func hostPort(raw string) (string, int) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", 0
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		port = map[string]int{"http": 80, "https": 443}[u.Scheme]
	}
	return u.Hostname(), port
}

// Profile implements llm.Profiler: the model's context window, completion
// caps and prices, from the table, Config.Profiles and the reasoning effort.
func (m *Model) Profile() llm.Profile { return m.profile }

// Complete implements llm.Model with one HTTP request: it never retries
// nor waits (the caller retries through its job queue). Every failure is a
// *llm.CallError wrapping one of llm's sentinels; see failure for which.
func (m *Model) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	creq, err := m.request(req)
	if err != nil {
		return llm.Response{}, &llm.CallError{
			Err: fmt.Errorf("openai %s: invalid request: %w: %w", m.name, llm.ErrPermanent, err)}
	}
	ex := &exchange{requestID: req.ID}
	resp, err := m.client.CreateChatCompletion(ex.attach(ctx), creq)
	if err != nil {
		return llm.Response{}, m.failure(ctx, ex, err)
	}
	return m.response(resp, parseLimits(ex.header))
}

// EstimateUsage is the most a request may cost: its estimated prompt
// tokens (llm.EstimatePromptTokens, none counted as cached) and its whole
// completion cap (0 when it sets none), priced at the uncached rate.
func (m *Model) EstimateUsage(req llm.Request) llm.Usage {
	u := llm.Usage{PromptTokens: llm.EstimatePromptTokens(req), CompletionTokens: max(req.MaxCompletionTokens, 0)}
	if m.profile.Priced {
		u.CostUSD = m.profile.Price.Cost(u)
	}
	return u
}
