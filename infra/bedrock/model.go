package bedrock

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/gbresearch/gb/jobs/llm"
)

// Model is an llm.Model backed by Bedrock's Converse API. It is safe for
// concurrent use.
type Model struct {
	name    string
	client  *bedrockruntime.Client
	log     *slog.Logger
	profile llm.Profile
	caching caching
	host    string // the endpoint's host and port, for traces
	port    int
	// throttled counts the calls throttled in a row, for the backoff of
	// the next (throttleWait); an answer resets it.
	throttled atomic.Int32
}

var (
	_ llm.Model    = (*Model)(nil)
	_ llm.Profiler = (*Model)(nil)
)

// New checks cfg, fills its defaults, loads the AWS configuration when
// cfg has none (the SDK's default chain: environment, then the role) and
// returns the model. Credentials are resolved at the first call, not here.
// A model the table does not know gets ContextWindowDefault and no price,
// and a warning is logged once.
func New(ctx context.Context, cfg Config) (*Model, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ac := cfg.AWS
	if ac == nil {
		loaded, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("error loading the AWS configuration for Bedrock: %w", err)
		}
		ac = &loaded
	}
	region := cfg.Region
	if region == "" {
		region = ac.Region
	}
	if region == "" {
		return nil, fmt.Errorf("bedrock config: no Region (set AWS_REGION or the Bedrock Region)")
	}
	s, _ := specOf(cfg.Model)
	m := &Model{name: cfg.Model, client: newClient(*ac, region, cfg), log: cfg.Logger, caching: s.caching,
		host: "bedrock-runtime." + region + ".amazonaws.com", port: 443}
	if cfg.Endpoint != "" {
		u, _ := url.Parse(cfg.Endpoint) // checked by withDefaults
		m.host, m.port = u.Hostname(), 443
		if p, err := strconv.Atoi(u.Port()); err == nil {
			m.port = p
		} else if u.Scheme == "http" {
			m.port = 80
		}
	}
	var known bool
	m.profile, known = profileFor(cfg.Model, overrideOf(cfg.Profiles, cfg.Model))
	if !known || !m.profile.Priced {
		m.log.Warn("bedrock: model not in the profile table; describe it in GB_MODEL_PROFILES",
			slog.String("model", m.name), slog.Int("context_window", m.profile.ContextWindow),
			slog.Bool("context_window_known", known), slog.Bool("priced", m.profile.Priced))
	}
	return m, nil
}

// newClient is the Bedrock Runtime client of a model. Its retryer is
// aws.NopRetryer: one attempt per call. The SDK's standard retryer would
// retry throttling and 5xx up to three times with its own backoff and its
// own client-side token bucket, inside one step; gb already retries those
// through River after taking capacity from the shared limiter in Postgres
// (gb_take_capacity), so the SDK's attempts would multiply gb's and spend
// the provider's quota behind the shared limiter's back.
func newClient(ac aws.Config, region string, cfg Config) *bedrockruntime.Client {
	return bedrockruntime.NewFromConfig(ac, func(o *bedrockruntime.Options) {
		o.Region = region
		o.Retryer = aws.NopRetryer{}
		o.HTTPClient = recordingDoer{client: cfg.httpClient()}
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
}

// Name implements llm.Model: the configured model id.
func (m *Model) Name() string { return m.name }

// Profile implements llm.Profiler: the model's window, caps and prices.
func (m *Model) Profile() llm.Profile { return m.profile }

// ServerAddress is the host and port of the endpoint the model calls (the
// Region's Bedrock Runtime, or Config.Endpoint): the server.address and
// server.port of its spans (jobs.GenAIServer).
func (m *Model) ServerAddress() (string, int) { return m.host, m.port }

// GenAIProvider is the OpenTelemetry GenAI conventions' gen_ai.provider.name
// of Bedrock's models, which the agent's traces record (jobs.GenAIProvider).
func (m *Model) GenAIProvider() string { return "aws.bedrock" }

// Complete implements llm.Model with one Converse request; it never
// retries nor waits. Every failure is a *llm.CallError (see failure).
func (m *Model) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	in, err := m.input(req)
	if err != nil {
		return llm.Response{}, &llm.CallError{
			Err: fmt.Errorf("bedrock %s: invalid request: %w: %w", m.name, llm.ErrPermanent, err)}
	}
	ex := &exchange{}
	out, err := m.client.Converse(ex.attach(ctx), in)
	if err != nil {
		return llm.Response{}, m.failure(ctx, ex, err)
	}
	m.throttled.Store(0)
	return m.response(req, out)
}

// EstimateUsage is the most a request may cost: its estimated prompt
// tokens at the uncached rate and its whole completion cap.
func (m *Model) EstimateUsage(req llm.Request) llm.Usage {
	u := llm.Usage{PromptTokens: llm.EstimatePromptTokens(req), CompletionTokens: max(req.MaxCompletionTokens, 0)}
	if m.profile.Priced {
		u.CostUSD = m.profile.Price.Cost(u)
	}
	return u
}
