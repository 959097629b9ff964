package bedrock

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/gbresearch/gb/infra/openai"
)

// ModelDefault is the model used when none is configured: Amazon Nova Lite,
// which answers on demand (no inference profile needed) in the Regions
// that have it.
const ModelDefault = "amazon.nova-lite-v1:0"

// EnvEndpoint overrides the Bedrock Runtime endpoint, for tests and local
// development against a fake (a deployment reaches the Region's endpoint,
// through its VPC interface endpoint when it has one).
const EnvEndpoint = "GB_BEDROCK_ENDPOINT"

// Config configures a Model. Zero fields take the defaults.
type Config struct {
	// Model is the model id, inference-profile id or ARN sent as modelId
	// and returned by Name (ModelDefault when empty).
	Model string
	// Region is the Bedrock Region; empty means the AWS configuration's
	// (AWS_REGION).
	Region string
	// Endpoint, when set, replaces the Region's endpoint (an http or https
	// URL): a fake in tests, a private endpoint's DNS name.
	Endpoint string
	// AWS is the AWS configuration (credentials, Region); nil means the
	// SDK's default chain, loaded by New.
	AWS *aws.Config
	// HTTPClient makes the requests; nil means the SDK's buildable client
	// (its TLS, dial and handshake timeouts) holding MaxIdleConnsPerHost
	// idle connections to the endpoint, with no overall timeout, so that
	// the caller's context bounds each call.
	HTTPClient *http.Client
	// Profiles describe models or correct the table, by model id (exact,
	// or without its geography prefix), as GB_MODEL_PROFILES does for the
	// OpenAI client. The Bedrock cache-write price follows the input price
	// it sets in the table's ratio.
	Profiles map[string]openai.ProfileOverride
	// Logger receives warnings (an unknown model, a dropped tool call);
	// nil means slog.Default().
	Logger *slog.Logger
}

// MaxIdleConnsPerHost is how many idle connections a Model keeps to the
// Bedrock endpoint: as many as the calls a worker makes at once (Go's
// default keeps 2, the SDK's 10), so that concurrent steps reuse their
// TLS connections instead of opening new ones after each burst.
const MaxIdleConnsPerHost = 64

// httpClient is the client a Model sends its requests with.
func (c Config) httpClient() doer {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
		t.MaxIdleConns = max(t.MaxIdleConns, MaxIdleConnsPerHost)
	})
}

// withDefaults fills the zero fields and checks the result.
func (c Config) withDefaults() (Config, error) {
	c.Model = cmp.Or(strings.TrimSpace(c.Model), ModelDefault)
	c.Region = strings.TrimSpace(c.Region)
	c.Endpoint = strings.TrimSpace(c.Endpoint)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	var errs []error
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("endpoint %q must be an http or https URL", c.Endpoint))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("bedrock config: %w", err)
	}
	return c, nil
}
