package providerbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/bedrock/conversefake"
	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/messenger"
)

// ModelDefault is the model the scenarios ask for, priced as OpenAI prices it.
const ModelDefault = "gpt-4o-mini"

// Providers a scenario runs on (EnvOptions.ProviderName).
const (
	// ProviderOpenAI is the OpenAI-compatible fake (infra/openai/openaifake)
	// reached through infra/openai.
	ProviderOpenAI = "openai"
	// ProviderBedrock is the Converse fake (infra/bedrock/conversefake)
	// reached through infra/bedrock and the AWS SDK, SigV4-signed.
	ProviderBedrock = "bedrock"
)

// BedrockModelDefault is the model the scenarios ask Bedrock for, priced as
// Bedrock prices it: Claude 3.5 Haiku, whose cache writes cost more than
// its input (infra/bedrock's table).
const BedrockModelDefault = "anthropic.claude-3-5-haiku-20241022-v1:0"

// PageSizeDefault is how many characters a page has: one fetch reads it.
const PageSizeDefault = 20_000

// EnvOptions say what a scenario runs on.
type EnvOptions struct {
	// Pool is a migrated database.
	Pool *pgxpool.Pool
	// ProviderName is ProviderOpenAI (the default) or ProviderBedrock.
	ProviderName string
	// Provider configures the fake provider; its Brain is the scenario's.
	// On Bedrock, its RPM, TPM, Latency and Models' windows and output
	// limits configure the Converse fake.
	Provider openaifake.Config
	// Model is the model asked for (ModelDefault, BedrockModelDefault on
	// Bedrock).
	Model string
	// Profiles correct what the model client knows of models.
	Profiles map[string]openai.ProfileOverride
	// Agent configures the working agents.
	Agent jobs.Config
	// Workers is how many agents work at once, each with its own River
	// client, as separate worker processes would (default 1).
	Workers int
	// Logger gets the agents' logs (default: discarded).
	Logger *slog.Logger
	// team gives the agents a web search over the page server (else a
	// search that says to fetch the pages given) and a Postgres messenger
	// (else no messages between siblings).
	team bool
	// otherModels are models the agents may be given besides Model, on
	// the same OpenAI fake.
	otherModels []string
}

// modelName is the model the scenario asks for: Model, or its provider's
// default.
func (o EnvOptions) modelName() string {
	switch {
	case o.Model != "":
		return o.Model
	case o.ProviderName == ProviderBedrock:
		return BedrockModelDefault
	}
	return ModelDefault
}

// Env is what a scenario runs on: the fake provider, a page server, the
// working agents, a user and a dataset of its own.
type Env struct {
	Pool *pgxpool.Pool
	// Fake is the OpenAI-compatible fake, Converse the Bedrock fake: the
	// one the scenario runs on (the other is nil). Stats and Calls read
	// either.
	Fake     *openaifake.Server
	Converse *conversefake.Server
	Pages    *pages
	Starter  *jobs.Service // inserts the researches; works none
	Agents   []*jobs.Service
	UserID   int64
	Dataset  string
	Model    string
	// Queue is the River queue of the scenario's step jobs.
	Queue    string
	tag      string
	listener *messenger.Listener
	users    int
}

// NewUser creates a user of the scenario's own (a user may have only a few
// researches working at once).
func (e *Env) NewUser(ctx context.Context) (int64, error) {
	e.users++
	name := fmt.Sprintf("providerbench_%s_%d", e.tag, e.users)
	if _, err := jobs.CreateKey(ctx, e.Pool, name); err != nil {
		return 0, err
	}
	return jobs.UserID(ctx, e.Pool, name)
}

// newEnv starts the provider with brain, the page server and the agents.
func newEnv(ctx context.Context, o EnvOptions, pageSize int, brain func(*pages) openaifake.Brain) (_ *Env, err error) {
	if o.Pool == nil {
		return nil, errors.New("providerbench: EnvOptions.Pool is required")
	}
	if o.ProviderName != "" && o.ProviderName != ProviderOpenAI && o.ProviderName != ProviderBedrock {
		return nil, fmt.Errorf("providerbench: provider %q is neither %s nor %s", o.ProviderName, ProviderOpenAI, ProviderBedrock)
	}
	e := &Env{Pool: o.Pool, Model: o.modelName(), Pages: newPages(pageSize)}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	model, err := e.startProvider(ctx, o, brain(e.Pages), logger)
	if err != nil {
		return nil, err
	}
	fetcher, err := e.Pages.fetcher()
	if err != nil {
		return nil, err
	}
	// What an earlier scenario's provider said of the model's limits is
	// not this one's.
	if _, err := o.Pool.Exec(ctx, `DELETE FROM gb_rate_limits WHERE key = $1 AND NOT configured`, e.Model); err != nil {
		return nil, fmt.Errorf("error clearing learned rate limits: %w", err)
	}
	if _, err := o.Pool.Exec(ctx, `DELETE FROM gb_model_windows WHERE model = $1`, e.Model); err != nil {
		return nil, fmt.Errorf("error clearing learned windows: %w", err)
	}
	tag := randomTag()
	e.Dataset = "providerbench_" + tag
	if _, err := kb.Load(ctx, o.Pool, e.Dataset, []kb.Document{{Source: "providerbench", Title: "providerbench",
		Body: "The dataset of a provider benchmark: the research is on the pages it fetches."}}); err != nil {
		return nil, fmt.Errorf("error creating the dataset: %w", err)
	}
	e.tag = tag
	if e.UserID, err = e.NewUser(ctx); err != nil {
		return nil, err
	}
	// A queue of its own keeps the scenario's steps away from the workers
	// of another scenario on the same database, which call another
	// provider.
	cfg := o.Agent
	cfg.Queue = "providerbench_" + tag
	e.Queue = cfg.Queue
	deps := jobs.Deps{Pool: o.Pool, Model: model, Logger: logger, Config: cfg, Search: noSearch{}, Fetch: fetcher}
	for _, name := range o.otherModels {
		m, err := openai.New(openai.Config{BaseURL: e.Fake.URL(), APIKey: apiKey(o.Provider), Model: name,
			Profiles: o.Profiles, Logger: logger})
		if err != nil {
			return nil, err
		}
		deps.Models = append(deps.Models, m)
	}
	if o.team {
		deps.Search = pageSearch{e.Pages}
		e.listener = messenger.NewListener(o.Pool, logger)
		if err := e.listener.Start(ctx); err != nil {
			return nil, fmt.Errorf("error starting the message listener: %w", err)
		}
		deps.Messenger = messenger.NewPostgres(o.Pool, e.listener, messenger.PostgresConfig{})
	}
	if e.Starter, err = jobs.New(deps); err != nil {
		return nil, err
	}
	deps.Work = true
	for range max(o.Workers, 1) {
		a, err := jobs.New(deps)
		if err != nil {
			return nil, err
		}
		if err := a.Start(ctx); err != nil {
			return nil, err
		}
		e.Agents = append(e.Agents, a)
	}
	return e, nil
}

// apiKey is the key the fake provider expects.
func apiKey(c openaifake.Config) string {
	if c.APIKey != "" {
		return c.APIKey
	}
	return openaifake.DefaultAPIKey
}

// Close stops the agents, the provider and the page server.
func (e *Env) Close() {
	for _, a := range e.Agents {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = a.Stop(ctx)
		cancel()
	}
	e.Agents = nil
	if e.listener != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = e.listener.Stop(ctx)
		cancel()
	}
	if e.Fake != nil {
		e.Fake.Close()
	}
	if e.Converse != nil {
		e.Converse.Close()
	}
	e.Pages.Close()
	e.cleanup()
}

// cleanup deletes what the scenario made: its users (and so their runs
// and everything that goes with them), its dataset, and what its provider
// taught of the model's limits.
func (e *Env) cleanup() {
	if e.tag == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, q := range []struct {
		sql string
		arg any
	}{
		{`DELETE FROM gb_users WHERE name LIKE 'providerbench\_' || $1 || '\_%'`, e.tag},
		{`DELETE FROM gb_kb_datasets WHERE name = $1`, e.Dataset},
		{`DELETE FROM gb_rate_limits WHERE key = $1 AND NOT configured`, e.Model},
		{`DELETE FROM gb_model_windows WHERE model = $1`, e.Model},
	} {
		if _, err := e.Pool.Exec(ctx, q.sql, q.arg); err != nil {
			slog.Error("providerbench could not delete what it made", "tag", e.tag, "sql", q.sql, "err", err)
		}
	}
}

// Start starts a research, for the scenario's first user unless p names
// another.
func (e *Env) Start(ctx context.Context, p jobs.StartParams) (*jobs.Run, error) {
	if p.UserID == 0 {
		p.UserID = e.UserID
	}
	p.Dataset = e.Dataset
	run, _, err := e.Starter.StartResearch(ctx, p)
	return run, err
}

// Wait waits until every run of ids has ended, or ctx ends.
func (e *Env) Wait(ctx context.Context, ids ...int64) error {
	for {
		var open int
		err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_runs
			WHERE root_id = ANY($1) AND ended_at IS NULL`, ids).Scan(&open)
		if err != nil {
			return fmt.Errorf("error waiting for the runs: %w", err)
		}
		if open == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d runs still working: %w", open, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// noSearch is the web search of the scenarios: they fetch pages by address.
type noSearch struct{}

func (noSearch) Name() string { return "none" }

func (noSearch) Search(context.Context, string, int) ([]jobs.SearchResult, llm.Usage, error) {
	return nil, llm.Usage{}, errors.New("web search is not part of this benchmark: fetch the pages you were given")
}

func randomTag() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
