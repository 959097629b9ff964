package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
	"github.com/gbresearch/gb/messenger"
)

// evalConfig is one configuration gb eval measures: the process's
// environment with some settings changed, and optionally a directory of
// prompt files that replace the built-in ones.
type evalConfig struct {
	// Label names it in the table ("A", "B").
	Label string `json:"label"`
	// Set are the settings changed, as environment variables.
	Set map[string]string `json:"set,omitempty"`
	// Prompts is a directory of prompt files (research.md, knowledge.md,
	// spawn.md, messaging.md, web.md) that replace the built-in parts of
	// the same name.
	Prompts string `json:"prompts,omitempty"`
	// Model is the model its runs recorded (filled in when it starts).
	Model string `json:"model"`
	// ForkStep, for B with --vs-fork-step, is the step of A's roots its
	// researches fork from.
	ForkStep *int `json:"fork_step,omitempty"`
}

// getenv is the configuration's environment: its settings over the
// process's.
func (c *evalConfig) getenv(k string) string {
	if v, ok := c.Set[k]; ok {
		return v
	}
	return os.Getenv(k)
}

// parseSettings reads KEY=VALUE settings, from flags and from a file of
// such lines (blank lines and # comments skipped), into set.
func parseSettings(set map[string]string, pairs []string, file string) error {
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("error reading settings: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				pairs = append([]string{strings.TrimPrefix(line, "export ")}, pairs...)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("error reading settings: %w", err)
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return usageErrorf("setting %q is not KEY=VALUE", p)
		}
		set[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return nil
}

// evalStack is one configuration's worker and API in this process, on the
// shared pool: its own River queue, so each configuration's steps run with
// its own model and settings.
type evalStack struct {
	cfg    *evalConfig
	agent  *jobs.Service
	client *apiClient
	web    bool
	stop   func()
}

// startEvalStack starts the configuration's agent on queue and serves its
// API on a loopback port; users are created by the caller.
func startEvalStack(ctx context.Context, pool *pgxpool.Pool, listener *messenger.Listener, c *evalConfig, queue string,
	guest bool, logger *slog.Logger) (*evalStack, error) {
	cfg, err := config.FromEnv(c.getenv)
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", c.Label, err)
	}
	model, err := cfg.NewModel(logger)
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", c.Label, err)
	}
	if c.Prompts != "" {
		if model, err = withPrompts(model, c.Prompts); err != nil {
			return nil, fmt.Errorf("configuration %s: %w", c.Label, err)
		}
	}
	c.Model = model.Name()
	models, err := cfg.NewModels(logger)
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", c.Label, err)
	}
	searcher, fetcher, err := cfg.NewWeb(logger)
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", c.Label, err)
	}
	ac := cfg.Agent()
	ac.Queue, ac.Guest = queue, guest
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: model, Models: models, Logger: logger, Config: ac,
		Messenger: messenger.NewPostgres(pool, listener, messenger.PostgresConfig{}), Search: searcher, Fetch: fetcher,
		Types: cfg.Types, Work: true})
	if err != nil {
		return nil, fmt.Errorf("configuration %s: %w", c.Label, err)
	}
	if err := agent.Start(ctx); err != nil {
		return nil, fmt.Errorf("configuration %s: %w", c.Label, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = agent.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("error listening: %w", err)
	}
	srv := httpapi.NewServer(httpapi.New(httpapi.Deps{Service: agent, Logger: logger, Notifier: listener}))
	go func() { _ = srv.Serve(ln) }()
	s := &evalStack{cfg: c, agent: agent, web: searcher != nil,
		client: &apiClient{base: "http://" + ln.Addr().String(), http: &http.Client{Timeout: clientTimeout}}}
	s.stop = func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if err := agent.Stop(sctx); err != nil {
			logger.Error("stopping the eval worker", "config", c.Label, "err", err)
		}
	}
	return s, nil
}

// promptParts are the built-in prompt parts a prompt directory may
// replace, by file name.
func promptParts() map[string]string {
	return map[string]string{"research.md": prompts.Research, "knowledge.md": prompts.Knowledge,
		"spawn.md": prompts.Spawn, "messaging.md": prompts.Messaging, "web.md": prompts.Web,
		"ask_owner.md": prompts.AskOwner, "propose_plan.md": prompts.ProposePlan}
}

// withPrompts wraps a model so that each built-in prompt part that dir has
// a file for is replaced by that file in every request's system prompt.
func withPrompts(m llm.Model, dir string) (llm.Model, error) {
	var swaps []string
	for name, old := range promptParts() {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("error reading prompt %s: %w", name, err)
		}
		swaps = append(swaps, strings.TrimSpace(old), strings.TrimSpace(string(b)))
	}
	if len(swaps) == 0 {
		return nil, usageErrorf("prompt directory %s has none of research.md, knowledge.md, spawn.md, messaging.md, web.md, ask_owner.md, propose_plan.md", dir)
	}
	pm := &promptModel{inner: m, swap: strings.NewReplacer(swaps...)}
	if p, ok := m.(llm.Profiler); ok {
		return &profiledPromptModel{promptModel: pm, profiler: p}, nil
	}
	return pm, nil
}

// promptModel is a model whose requests have their prompt parts replaced.
type promptModel struct {
	inner llm.Model
	swap  *strings.Replacer
}

// Name is the model's own.
func (m *promptModel) Name() string { return m.inner.Name() }

// Complete makes the call with the replaced system prompt.
func (m *promptModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	req.System = m.swap.Replace(req.System)
	return m.inner.Complete(ctx, req)
}

// EstimateUsage is the model's own estimate when it has one, else the
// prompt as llm.EstimatePromptTokens counts it and the completion cap.
func (m *promptModel) EstimateUsage(req llm.Request) llm.Usage {
	req.System = m.swap.Replace(req.System)
	if e, ok := m.inner.(jobs.UsageEstimator); ok {
		return e.EstimateUsage(req)
	}
	return llm.Usage{PromptTokens: llm.EstimatePromptTokens(req), CompletionTokens: req.MaxCompletionTokens}
}

// profiledPromptModel is a promptModel of a model that knows its profile.
type profiledPromptModel struct {
	*promptModel
	profiler llm.Profiler
}

// Profile is the model's own.
func (m *profiledPromptModel) Profile() llm.Profile { return m.profiler.Profile() }
