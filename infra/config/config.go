// Package config reads the service's settings from the environment, through
// a getenv function a test can hand in, and validates them with errors that
// name the variable and what it allows.
//
// It may import jobs, jobs/llm, infra/bedrock, infra/fetch, infra/offline,
// infra/openai and infra/search.
package config

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gbresearch/gb/infra/bedrock"
	"github.com/gbresearch/gb/infra/fetch"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/search"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// Environment variables the service reads. Every one of them is declared in
// template.yaml or documented as local-only in the README.
const (
	EnvDatabaseURL       = "DATABASE_URL"
	EnvDatabaseSecretARN = "DATABASE_SECRET_ARN"
	EnvDatabaseIAMAuth   = "DATABASE_IAM_AUTH"
	EnvDatabaseProxy     = "DATABASE_PROXY"
	EnvOpenAIKey         = "OPENAI_API_KEY"
	EnvOpenAISecretARN   = "OPENAI_SECRET_ARN"
	EnvOpenAIBaseURL     = "OPENAI_BASE_URL"
	EnvModel             = "GB_MODEL"
	EnvStepTimeout       = "GB_STEP_TIMEOUT"
	// EnvOutageHorizon is how long a research waits out its provider's
	// outage before it ends with the outage's error.
	EnvOutageHorizon  = "GB_OUTAGE_HORIZON"
	EnvMaxCostUSD     = "GB_MAX_COST_USD"
	EnvMaxTokens      = "GB_MAX_TOKENS"
	EnvOfflineDelay   = "GB_OFFLINE_DELAY"
	EnvLogLevel       = "GB_LOG_LEVEL"
	EnvWorkerFunction = "WORKER_FUNCTION_NAME"
	// EnvSearchSecretARN is the Secrets Manager secret holding the search
	// provider's key, in the Lambdas (instead of GB_SEARCH_API_KEY).
	EnvSearchSecretARN = "GB_SEARCH_SECRET_ARN"
	// EnvModels is the allow-list of models a sub-agent may be given,
	// comma-separated; the first is the default (then GB_MODEL is not set).
	EnvModels = "GB_MODELS"
	// EnvMaxSubagents lowers the sub-agents every tree may have (0 to 10;
	// 0 turns spawning off).
	EnvMaxSubagents = "GB_MAX_SUBAGENTS"
	// EnvAgentTypesDir is a directory of operators' sub-agent types.
	EnvAgentTypesDir = "GB_AGENT_TYPES_DIR"
	// EnvMaxWorkers is how many step jobs one working process runs at
	// once (MaxWorkersMin to MaxWorkersMax).
	EnvMaxWorkers = "GB_MAX_WORKERS"
	// EnvDBPool is the size of a working process's database pool
	// (DBPoolMin to DBPoolMax): the worker Lambda, gb worker and gb dev.
	EnvDBPool = "GB_DB_POOL"
	// EnvModelProfiles describes models or corrects the table of windows,
	// caps and prices (openai.ParseProfiles); EnvReasoningEffort is sent as
	// reasoning_effort to reasoning models.
	EnvModelProfiles   = "GB_MODEL_PROFILES"
	EnvReasoningEffort = "GB_REASONING_EFFORT"
	// EnvRateLimits is each model's requests and tokens per minute, a JSON
	// object by model name: {"gpt-4o-mini": {"rpm": 500, "tpm": 200000}}.
	// Unset, a model is limited by what its provider says in its answers.
	EnvRateLimits = "GB_RATE_LIMITS"
	// EnvPromptBudget caps the prompt a step sends, in tokens, below its
	// model's window (jobs.PromptBudgetDefault when unset).
	EnvPromptBudget = "GB_PROMPT_BUDGET"
	// EnvModelProvider picks the models' provider: openai (the
	// OpenAI-compatible endpoint, or the offline policy without a key) or
	// bedrock (Amazon Bedrock's Converse API, with the role's credentials;
	// GB_MODEL and GB_MODELS are then Bedrock model or inference-profile
	// ids). Unset means openai.
	EnvModelProvider = "GB_MODEL_PROVIDER"
	// EnvBedrockRegion is the Region of Bedrock's endpoint; unset means
	// the SDK's (AWS_REGION).
	EnvBedrockRegion = "GB_BEDROCK_REGION"
	// EnvCitations is what a research that asks for nothing does with its
	// report's citations: off, flag or revise (jobs.CitationsModes);
	// unset means revise for a language model and flag for the offline
	// policy.
	EnvCitations = "GB_CITATIONS"
	// EnvVerifyModel names a model (the default or one of GB_MODELS) that
	// judges every cited claim of a report; unset: a run's own model
	// (never the offline policy).
	EnvVerifyModel = "GB_VERIFY_MODEL"
	// EnvCitationsJudge is on (the default) or off: off leaves a report's
	// citations to the lexical check alone.
	EnvCitationsJudge = "GB_CITATIONS_JUDGE"
	// EnvPin is run (the default) or latest: whether a research keeps the
	// prompts, types, tool schemas, model profiles and limits it started
	// with across deploys, or takes a new deploy's at its next step.
	EnvPin = "GB_PIN"
)

// Model providers of GB_MODEL_PROVIDER.
const (
	ProviderOpenAI  = "openai"
	ProviderBedrock = "bedrock"
)

// Defaults and bounds of GB_MAX_WORKERS and GB_DB_POOL.
const (
	// MaxWorkersDefault is sized for I/O-bound steps: a step holds no
	// connection during its model call, so many steps share a small pool.
	MaxWorkersDefault = 1000
	MaxWorkersMin     = 1
	MaxWorkersMax     = 10000
	// DBPoolDefault is a working process's pool size; the process also
	// opens two connections outside it (the messenger's LISTEN and its
	// liveness lock).
	DBPoolDefault = 25
	// DBPoolMin leaves River's LISTEN connection one to share with the steps.
	DBPoolMin = 2
	DBPoolMax = 1000
)

// Config is the service's settings.
type Config struct {
	DatabaseURL       string
	DatabaseSecretARN string
	DatabaseIAMAuth   bool
	DatabaseProxy     bool
	OpenAIKey         string
	OpenAISecretARN   string
	OpenAIBaseURL     string
	Model             string
	StepTimeout       time.Duration
	// OutageHorizon is how long a research waits for a provider that is
	// down (GB_OUTAGE_HORIZON; jobs.OutageHorizonDefault when 0).
	OutageHorizon  time.Duration
	MaxCostUSD     float64
	MaxTokens      int64
	OfflineDelay   time.Duration
	LogLevel       slog.Level
	WorkerFunction string
	// Search is the web search provider's settings (GB_SEARCH_*); no
	// provider means no web tools.
	Search          search.Config
	SearchSecretARN string
	// FetchAllow and FetchPorts widen what fetch may reach
	// (GB_FETCH_ALLOW, GB_FETCH_PORTS); both are for tests and local
	// development.
	FetchAllow []fetch.Rule
	FetchPorts []uint16
	// Models is GB_MODELS: the models a sub-agent may be given, the
	// default first.
	Models []string
	// MaxSubagents, when set, is GB_MAX_SUBAGENTS.
	MaxSubagents *int
	// Types is the registry of sub-agent types, with GB_AGENT_TYPES_DIR's.
	Types *jobs.Types
	// MaxWorkers is GB_MAX_WORKERS, MaxWorkersDefault when unset.
	MaxWorkers int
	// DBPool is GB_DB_POOL, DBPoolDefault when unset: the pool size of the
	// processes that work step jobs.
	DBPool int32
	// ModelProfiles is GB_MODEL_PROFILES: models described, or the table
	// corrected, by model name (see openai.ParseProfiles).
	ModelProfiles map[string]openai.ProfileOverride
	// ReasoningEffort is GB_REASONING_EFFORT, sent to reasoning models
	// ("" sends none).
	ReasoningEffort string
	// RateLimits is GB_RATE_LIMITS, by model name.
	RateLimits map[string]jobs.RateLimit
	// PromptBudget is GB_PROMPT_BUDGET; 0 means jobs.PromptBudgetDefault.
	PromptBudget int
	// Citations is GB_CITATIONS; "" means the agent's default.
	Citations string
	// VerifyModel is GB_VERIFY_MODEL: the citation check's judge.
	VerifyModel string
	// JudgeOff is GB_CITATIONS_JUDGE=off: no citation judge.
	JudgeOff bool
	// Pin is GB_PIN: jobs.PinRun or jobs.PinLatest ("" is jobs.PinRun).
	Pin string
	// ModelProvider is GB_MODEL_PROVIDER: ProviderOpenAI or
	// ProviderBedrock.
	ModelProvider string
	// BedrockRegion and BedrockEndpoint are GB_BEDROCK_REGION and
	// GB_BEDROCK_ENDPOINT (bedrock.EnvEndpoint, for tests and local
	// development against a fake).
	BedrockRegion   string
	BedrockEndpoint string
}

// Error is an invalid setting.
type Error struct {
	Var string
	Msg string
}

// Error names the variable and what is wrong with it.
func (e *Error) Error() string { return e.Var + ": " + e.Msg }

// FromEnv reads and validates the settings.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:       getenv(EnvDatabaseURL),
		DatabaseSecretARN: getenv(EnvDatabaseSecretARN),
		OpenAIKey:         getenv(EnvOpenAIKey),
		OpenAISecretARN:   getenv(EnvOpenAISecretARN),
		OpenAIBaseURL:     getenv(EnvOpenAIBaseURL),
		Model:             getenv(EnvModel),
		WorkerFunction:    getenv(EnvWorkerFunction),
		BedrockRegion:     strings.TrimSpace(getenv(EnvBedrockRegion)),
		BedrockEndpoint:   strings.TrimSpace(getenv(bedrock.EnvEndpoint)),
	}
	var errs []error
	switch p := strings.TrimSpace(getenv(EnvModelProvider)); p {
	case "", ProviderOpenAI:
		c.ModelProvider = ProviderOpenAI
	case ProviderBedrock:
		c.ModelProvider = ProviderBedrock
	default:
		errs = append(errs, &Error{EnvModelProvider, fmt.Sprintf("%q must be openai or bedrock", p)})
	}
	boolVar := func(name string, dst *bool) {
		if v := getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, &Error{name, fmt.Sprintf("%q is not a boolean; use true or false", v)})
			}
			*dst = b
		}
	}
	durVar := func(name string, dst *time.Duration, lo, hi time.Duration) {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < lo || d > hi {
				errs = append(errs, &Error{name, fmt.Sprintf("%q must be a duration between %s and %s, like 90s", v, lo, hi)})
			}
			*dst = d
		}
	}
	errs = append(errs, c.readSizes(getenv)...)
	errs = append(errs, c.readModelTuning(getenv)...)
	boolVar(EnvDatabaseIAMAuth, &c.DatabaseIAMAuth)
	boolVar(EnvDatabaseProxy, &c.DatabaseProxy)
	durVar(EnvStepTimeout, &c.StepTimeout, time.Second, 15*time.Minute)
	durVar(EnvOutageHorizon, &c.OutageHorizon, time.Minute, 7*24*time.Hour)
	durVar(EnvOfflineDelay, &c.OfflineDelay, 0, time.Minute)
	if v := getenv(EnvMaxCostUSD); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1000 {
			errs = append(errs, &Error{EnvMaxCostUSD, fmt.Sprintf("%q must be a number of dollars between 0 and 1000", v)})
		}
		c.MaxCostUSD = f
	}
	if v := getenv(EnvMaxTokens); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, &Error{EnvMaxTokens, fmt.Sprintf("%q must be a whole number of tokens, 0 for no budget", v)})
		}
		c.MaxTokens = n
	}
	if v := getenv(EnvLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, &Error{EnvLogLevel, fmt.Sprintf("%q must be debug, info, warn or error", v)})
		}
	}
	if v := getenv(EnvMaxSubagents); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > jobs.MaxSubagentsPerTree {
			errs = append(errs, &Error{EnvMaxSubagents, fmt.Sprintf("%q must be a whole number from 0 (no sub-agents) to %d", v, jobs.MaxSubagentsPerTree)})
		}
		c.MaxSubagents = &n
	}
	if v := getenv(EnvModels); v != "" {
		for _, m := range strings.Split(v, ",") {
			if m = strings.TrimSpace(m); m == "" || slices.Contains(c.Models, m) {
				errs = append(errs, &Error{EnvModels, fmt.Sprintf("%q must be model names separated by commas, each once", v)})
				break
			}
			c.Models = append(c.Models, m)
		}
		switch {
		case c.ModelProvider != ProviderBedrock && c.OpenAIKey == "" && c.OpenAISecretARN == "":
			errs = append(errs, &Error{EnvModels, "needs OPENAI_API_KEY or GB_MODEL_PROVIDER=bedrock (the offline model is the only one without either)"})
		case c.Model != "" && len(c.Models) > 0 && c.Model != c.Models[0]:
			errs = append(errs, &Error{EnvModels, fmt.Sprintf("its first model is the default: leave GB_MODEL unset or make it %q", c.Models[0])})
		case len(c.Models) > 0:
			c.Model = c.Models[0]
		}
	}
	types, err := jobs.LoadTypes(getenv(EnvAgentTypesDir))
	if err != nil {
		errs = append(errs, &Error{EnvAgentTypesDir, err.Error()})
	}
	c.Types = types
	c.Search, c.SearchSecretARN = search.ConfigFromEnv(getenv), getenv(EnvSearchSecretARN)
	if c.SearchSecretARN == "" || c.Search.APIKey != "" {
		// With a secret, the key is read at start (infra/aws), then checked.
		if _, err := search.New(c.Search); err != nil {
			errs = append(errs, err)
		}
	}
	if c.FetchAllow, err = fetch.ParseAllow(getenv(fetch.EnvAllow)); err != nil {
		errs = append(errs, err)
	}
	if c.FetchPorts, err = fetch.ParsePorts(getenv(fetch.EnvPorts)); err != nil {
		errs = append(errs, err)
	}
	if v := c.VerifyModel; v != "" && v != c.ModelName() && !slices.Contains(c.Models, v) {
		errs = append(errs, &Error{EnvVerifyModel, fmt.Sprintf("%q is not a model the agent can call: use the default "+
			"model (%s) or one of GB_MODELS", v, c.ModelName())})
	}
	if err := c.checkDollarBudget(); err != nil {
		errs = append(errs, err)
	}
	if c.DatabaseURL == "" && c.DatabaseSecretARN == "" {
		errs = append(errs, &Error{EnvDatabaseURL, "is required (or DATABASE_SECRET_ARN); locally, run infra/pg.sh start"})
	}
	return c, errors.Join(errs...)
}

// intSetting reads a whole number setting from lo to hi, def when unset;
// what says what it counts, for the error.
func intSetting(getenv func(string) string, name string, def, lo, hi int, what string) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	allowed := fmt.Sprintf("it must be %d to %d (%s, default %d)", lo, hi, what, def)
	n, err := strconv.Atoi(v)
	switch {
	case errors.Is(err, strconv.ErrRange), err == nil && (n < lo || n > hi):
		return def, &Error{name, fmt.Sprintf("%s is out of range; %s", v, allowed)}
	case err != nil:
		return def, &Error{name, fmt.Sprintf("%q is not a whole number; %s", v, allowed)}
	}
	return n, nil
}

// Sizes reads GB_MAX_WORKERS and GB_DB_POOL alone, their defaults when
// unset (gb bench sizes its worker as a live one without the rest of the
// configuration).
func Sizes(getenv func(string) string) (maxWorkers int, pool int32, err error) {
	var c Config
	err = errors.Join(c.readSizes(getenv)...)
	return c.MaxWorkers, c.DBPool, err
}

// readSizes reads GB_MAX_WORKERS and GB_DB_POOL into c, their defaults
// when unset, and returns what is wrong with them.
func (c *Config) readSizes(getenv func(string) string) []error {
	workers, werr := intSetting(getenv, EnvMaxWorkers, MaxWorkersDefault, MaxWorkersMin, MaxWorkersMax,
		"step jobs one worker runs at once")
	pool, perr := intSetting(getenv, EnvDBPool, DBPoolDefault, DBPoolMin, DBPoolMax,
		"connections of a worker's database pool")
	c.MaxWorkers, c.DBPool = workers, int32(pool)
	var errs []error
	for _, err := range []error{werr, perr} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// readModelTuning reads GB_MODEL_PROFILES, GB_REASONING_EFFORT,
// GB_RATE_LIMITS and GB_PROMPT_BUDGET into c and returns what is wrong
// with them.
func (c *Config) readModelTuning(getenv func(string) string) []error {
	var errs []error
	var err error
	if c.ModelProfiles, err = openai.ParseProfiles(getenv(EnvModelProfiles)); err != nil {
		errs = append(errs, &Error{EnvModelProfiles, err.Error()})
	}
	if c.ReasoningEffort, err = openai.ParseReasoningEffort(getenv(EnvReasoningEffort)); err != nil {
		errs = append(errs, &Error{EnvReasoningEffort, err.Error()})
	}
	if c.RateLimits, err = parseRateLimits(getenv(EnvRateLimits)); err != nil {
		errs = append(errs, &Error{EnvRateLimits, err.Error()})
	}
	if v := getenv(EnvPromptBudget); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < promptBudgetMin || n > promptBudgetMax {
			errs = append(errs, &Error{EnvPromptBudget, fmt.Sprintf("%q must be a whole number of tokens from %d to %d",
				v, promptBudgetMin, promptBudgetMax)})
		}
		c.PromptBudget = n
	}
	c.VerifyModel = strings.TrimSpace(getenv(EnvVerifyModel))
	switch v := strings.TrimSpace(getenv(EnvCitationsJudge)); v {
	case "", "on":
	case "off":
		c.JudgeOff = true
	default:
		errs = append(errs, &Error{EnvCitationsJudge, fmt.Sprintf("%q must be on or off (or unset: on)", v)})
	}
	if c.Citations = getenv(EnvCitations); c.Citations != "" && !slices.Contains(jobs.CitationsModes, c.Citations) {
		errs = append(errs, &Error{EnvCitations, fmt.Sprintf("%q must be off, flag or revise (or unset: revise for a "+
			"language model, flag for the offline policy)", c.Citations)})
	}
	switch c.Pin = strings.TrimSpace(getenv(EnvPin)); c.Pin {
	case "", jobs.PinRun, jobs.PinLatest:
	default:
		errs = append(errs, &Error{EnvPin, fmt.Sprintf("%q must be %s or %s (or unset: %s)", c.Pin, jobs.PinRun,
			jobs.PinLatest, jobs.PinRun)})
	}
	return errs
}

// Bounds of GB_PROMPT_BUDGET: a budget under a few thousand tokens leaves
// no room for a page, and one over ten million exceeds every window.
const (
	promptBudgetMin = 4000
	promptBudgetMax = 10_000_000
)

// parseRateLimits reads GB_RATE_LIMITS: a JSON object of models' limits
// per minute; empty means none.
func parseRateLimits(s string) (map[string]jobs.RateLimit, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var out map[string]jobs.RateLimit
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf(`must be a JSON object of limits by model name, such as {"gpt-4o-mini": {"rpm": 500, "tpm": 200000}}: %w`, err)
	}
	for model, l := range out {
		switch {
		case strings.TrimSpace(model) == "":
			return nil, errors.New("a model name is empty")
		case l.RPM < 0 || l.TPM < 0:
			return nil, fmt.Errorf("%s: rpm and tpm must not be negative", model)
		case l.RPM == 0 && l.TPM == 0:
			return nil, fmt.Errorf("%s: give rpm, tpm or both (requests and tokens per minute)", model)
		}
	}
	return out, nil
}

// openAIConfig is the model endpoint's configuration for the named model.
func (c Config) openAIConfig(model string, logger *slog.Logger) openai.Config {
	return openai.Config{BaseURL: c.OpenAIBaseURL, APIKey: c.OpenAIKey, Model: model, Logger: logger,
		Profiles: c.ModelProfiles, ReasoningEffort: c.ReasoningEffort}
}

// Agent returns the agent settings of the config, the working processes'
// MaxWorkers included (the API's and the scheduler's River clients only
// insert and ignore it).
func (c Config) Agent() jobs.Config {
	return jobs.Config{StepTimeout: c.StepTimeout, MaxCostUSD: c.MaxCostUSD, MaxTokens: c.MaxTokens,
		MaxSubagents: c.MaxSubagents, MaxWorkers: c.MaxWorkers, RateLimits: c.RateLimits, PromptBudget: c.PromptBudget,
		Citations: c.Citations, VerifyModel: c.VerifyModel, JudgeOff: c.JudgeOff, Pin: c.Pin,
		Outage: jobs.OutageConfig{Horizon: c.OutageHorizon}}
}

// NewWeb returns the web search provider and page fetcher the settings ask
// for, or nil and nil when no provider is configured (no web tools).
func (c Config) NewWeb(logger *slog.Logger) (jobs.Searcher, jobs.Fetcher, error) {
	sc := c.Search
	sc.Options.Logger = logger
	s, err := search.New(sc)
	if err != nil || s == nil {
		return nil, nil, err
	}
	return s, fetch.New(fetch.Config{Allow: c.FetchAllow, Ports: c.FetchPorts, Logger: logger}), nil
}

// NewWebhookSender returns the sender of webhook deliveries, through the
// same guard and allow-list (GB_FETCH_ALLOW, GB_FETCH_PORTS) as fetch.
func (c Config) NewWebhookSender(logger *slog.Logger) jobs.WebhookSender {
	return fetch.NewWebhookClient(fetch.Config{Allow: c.FetchAllow, Ports: c.FetchPorts, Logger: logger})
}

// bedrockConfig is Bedrock's configuration for the named model.
func (c Config) bedrockConfig(model string, logger *slog.Logger) bedrock.Config {
	return bedrock.Config{Model: model, Region: c.BedrockRegion, Endpoint: c.BedrockEndpoint,
		Profiles: c.ModelProfiles, Logger: logger}
}

// newModel is the named model of the configured provider.
func (c Config) newModel(name string, logger *slog.Logger) (llm.Model, error) {
	if c.ModelProvider == ProviderBedrock {
		return bedrock.New(context.Background(), c.bedrockConfig(name, logger))
	}
	return openai.New(c.openAIConfig(name, logger))
}

// ModelName is the name of the model the settings select: the Bedrock
// model with GB_MODEL_PROVIDER=bedrock, the OpenAI model when a key or its
// secret is set, the offline policy otherwise.
func (c Config) ModelName() string {
	switch {
	case c.ModelProvider == ProviderBedrock:
		return cmp.Or(strings.TrimSpace(c.Model), bedrock.ModelDefault)
	case c.OpenAIKey == "" && c.OpenAISecretARN == "":
		return offline.Name
	}
	return cmp.Or(strings.TrimSpace(c.Model), openai.ModelDefault)
}

// ModelProfile is the profile of a named model of the configured
// provider, GB_MODEL_PROFILES applied, without a client (the processes
// that only start researches need it to check their budgets); ok is false
// for the offline policy, which has none and costs nothing.
func (c Config) ModelProfile(name string) (p llm.Profile, ok bool) {
	switch {
	case name == offline.Name:
		return p, false
	case c.ModelProvider == ProviderBedrock:
		return bedrock.ProfileOf(name, c.ModelProfiles), true
	}
	return openai.ProfileOf(name, c.ModelProfiles, c.ReasoningEffort), true
}

// checkDollarBudget refuses GB_MAX_COST_USD when a model a research may
// call has no price: its calls would be counted at $0 and the budget would
// hold nothing.
func (c Config) checkDollarBudget() error {
	if c.MaxCostUSD <= 0 {
		return nil
	}
	var unpriced []string
	for _, name := range append([]string{c.ModelName()}, c.Models...) {
		if p, ok := c.ModelProfile(name); ok && !p.Priced && !slices.Contains(unpriced, name) {
			unpriced = append(unpriced, name)
		}
	}
	if len(unpriced) == 0 {
		return nil
	}
	return &Error{EnvMaxCostUSD, fmt.Sprintf("is %g, but gb has no price for %s, so the budget would hold nothing "+
		"(its calls would count $0): give the price in %s, e.g. {%q:{\"input\":0.5,\"output\":1.5}} "+
		"(US dollars per million tokens), or unset %s and budget in tokens (%s)",
		c.MaxCostUSD, strings.Join(unpriced, ", "), EnvModelProfiles, unpriced[0], EnvMaxCostUSD, EnvMaxTokens)}
}

// NewModels returns the models a sub-agent may be given (GB_MODELS), on
// the same provider and endpoint as the default; empty without GB_MODELS.
func (c Config) NewModels(logger *slog.Logger) ([]llm.Model, error) {
	var out []llm.Model
	for _, name := range c.Models {
		m, err := c.newModel(name, logger)
		if err != nil {
			return nil, fmt.Errorf("error configuring model %s of %s: %w", name, EnvModels, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// NewModel returns the model the settings ask for: Bedrock with
// GB_MODEL_PROVIDER=bedrock, else the OpenAI-compatible endpoint when a
// key is set, else the offline policy.
func (c Config) NewModel(logger *slog.Logger) (llm.Model, error) {
	if c.ModelProvider == ProviderBedrock {
		m, err := bedrock.New(context.Background(), c.bedrockConfig(c.Model, logger))
		if err != nil {
			return nil, fmt.Errorf("error configuring the Bedrock model: %w", err)
		}
		return m, nil
	}
	if c.OpenAIKey == "" {
		return &offline.Model{Delay: c.OfflineDelay}, nil
	}
	m, err := openai.New(c.openAIConfig(c.Model, logger))
	if err != nil {
		return nil, fmt.Errorf("error configuring the OpenAI model: %w", err)
	}
	return m, nil
}
