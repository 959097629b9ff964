package search

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gbresearch/gb/infra/httpwait"
	"github.com/gbresearch/gb/jobs"
)

// Environment variables read by ConfigFromEnv.
const (
	// EnvProvider names the provider: searxng, brave, tavily or openai;
	// empty means no web search (and no web tools).
	EnvProvider = "GB_SEARCH_PROVIDER"
	// EnvURL is the searxng instance's base URL (required for it), or an
	// override of the other providers' endpoints (tests point it at fakes).
	EnvURL = "GB_SEARCH_URL"
	// EnvAPIKey is the brave or tavily key (for openai, an optional
	// override of OPENAI_API_KEY).
	EnvAPIKey = "GB_SEARCH_API_KEY"
	// EnvModel is the openai provider's search-capable model.
	EnvModel = "GB_SEARCH_MODEL"
	// EnvOpenAIBaseURL and EnvOpenAIAPIKey are the model endpoint's, which
	// the openai provider shares with the agents' model.
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
	EnvOpenAIAPIKey  = "OPENAI_API_KEY"
)

// Provider names, the values of GB_SEARCH_PROVIDER.
const (
	SearXNG = "searxng"
	Brave   = "brave"
	Tavily  = "tavily"
	OpenAI  = "openai"
)

// providers lists the allowed values, for error messages.
const providers = "searxng, brave, tavily or openai (or empty for no web tools)"

// TimeoutDefault bounds one HTTP attempt of the HTTP providers; the openai
// provider, whose model searches and writes, gets OpenAITimeoutDefault.
const (
	TimeoutDefault       = 20 * time.Second
	OpenAITimeoutDefault = 90 * time.Second
)

// Options are what every provider constructor takes besides its key.
// Zero fields take the defaults.
type Options struct {
	// BaseURL overrides the provider's endpoint root (searxng: the
	// instance; brave: https://api.search.brave.com; tavily:
	// https://api.tavily.com; openai: https://api.openai.com/v1).
	BaseURL string
	// Model is the openai provider's model (default ModelDefault).
	Model string
	// HTTPClient makes the requests; nil means a client whose Timeout is
	// Timeout.
	HTTPClient *http.Client
	// Timeout bounds one attempt when HTTPClient is nil.
	Timeout time.Duration
	// MaxRetries: zero means MaxRetriesDefault, negative means no retry.
	MaxRetries  int
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Logger gets retries and warnings; nil means slog.Default().
	Logger *slog.Logger
}

// retrier builds the shared retry loop of one provider.
func (o Options) retrier(provider string, timeout time.Duration, errText func([]byte) string) *retrier {
	client := o.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: cmp.Or(o.Timeout, timeout)}
	}
	retries := cmp.Or(o.MaxRetries, MaxRetriesDefault)
	if retries < 0 {
		retries = 0
	}
	return &retrier{
		provider: provider, client: client, maxRetries: retries,
		backoffBase: cmp.Or(o.BackoffBase, BackoffBaseDefault),
		backoffMax:  max(cmp.Or(o.BackoffMax, BackoffMaxDefault), cmp.Or(o.BackoffBase, BackoffBaseDefault)),
		log:         cmp.Or(o.Logger, slog.Default()), errText: errText,
		sleep: httpwait.Sleep,
	}
}

// Config is a provider choice with its settings, as ConfigFromEnv reads it.
// The Lambdas fill APIKey from a secret instead.
type Config struct {
	Provider string
	// URL is GB_SEARCH_URL (for openai, OPENAI_BASE_URL when it is unset).
	URL string
	// APIKey is GB_SEARCH_API_KEY (for openai, OPENAI_API_KEY when it is
	// unset). It is never logged.
	APIKey string
	Model  string
	// Options apply to the provider built; their BaseURL and Model are
	// taken from URL and Model.
	Options Options
}

// String describes the configuration without its key.
func (c Config) String() string {
	key := "(unset)"
	if c.APIKey != "" {
		key = "(set)"
	}
	return fmt.Sprintf("search.Config{Provider: %q, URL: %q, Model: %q, APIKey: %s}", c.Provider, c.URL, c.Model, key)
}

// GoString is String, so %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// LogValue keeps the key out of logs.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// ConfigFromEnv reads the search configuration through getenv (os.Getenv
// when nil). It checks nothing: New does.
func ConfigFromEnv(getenv func(string) string) Config {
	if getenv == nil {
		getenv = os.Getenv
	}
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c := Config{Provider: strings.ToLower(get(EnvProvider)), URL: get(EnvURL), APIKey: get(EnvAPIKey), Model: get(EnvModel)}
	if c.Provider == OpenAI {
		c.URL = cmp.Or(c.URL, get(EnvOpenAIBaseURL))
		c.APIKey = cmp.Or(c.APIKey, get(EnvOpenAIAPIKey))
	}
	return c
}

// FromEnv builds the configured provider: nil (and no error) when
// GB_SEARCH_PROVIDER is empty and nothing else is set; an error naming the
// variable for a bad or half-set configuration.
func FromEnv(getenv func(string) string) (jobs.Searcher, error) {
	return New(ConfigFromEnv(getenv))
}

// New checks c and builds its provider; it returns nil and no error when
// no provider is chosen and nothing else is set. Errors name the
// environment variable at fault and what it allows.
func New(c Config) (jobs.Searcher, error) {
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("search config: %w", err)
	}
	o := c.Options
	o.BaseURL, o.Model = c.URL, c.Model
	var s jobs.Searcher
	var err error
	switch c.Provider {
	case "":
		return nil, nil
	case SearXNG:
		s, err = NewSearXNG(c.URL, o)
	case Brave:
		s, err = NewBrave(c.APIKey, o)
	case Tavily:
		s, err = NewTavily(c.APIKey, o)
	case OpenAI:
		s, err = NewOpenAI(c.APIKey, o)
	}
	if err != nil {
		return nil, fmt.Errorf("search config: %w", err)
	}
	return s, nil
}

// check reports what is missing, misplaced or malformed.
func (c Config) check() error {
	var errs []error
	switch c.Provider {
	case "":
		for _, v := range []struct{ name, val string }{{EnvURL, c.URL}, {EnvAPIKey, c.APIKey}, {EnvModel, c.Model}} {
			if v.val != "" {
				errs = append(errs, fmt.Errorf("%s is set but %s is empty: set %s to %s", v.name, EnvProvider, EnvProvider, providers))
			}
		}
		return errors.Join(errs...)
	case SearXNG, Brave, Tavily, OpenAI:
	default:
		return fmt.Errorf("%s=%q: must be %s", EnvProvider, c.Provider, providers)
	}
	if c.Provider == SearXNG && c.URL == "" {
		errs = append(errs, fmt.Errorf("%s is required with %s=searxng: the instance's base URL, e.g. http://127.0.0.1:8888", EnvURL, EnvProvider))
	}
	if c.URL != "" {
		if err := checkURL(c.URL); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvURL, err))
		}
	}
	switch {
	case c.Provider == SearXNG && c.APIKey != "":
		errs = append(errs, fmt.Errorf("%s is set but searxng takes no key: unset it", EnvAPIKey))
	case (c.Provider == Brave || c.Provider == Tavily) && c.APIKey == "":
		errs = append(errs, fmt.Errorf("%s is required with %s=%s", EnvAPIKey, EnvProvider, c.Provider))
	case c.Provider == OpenAI && c.APIKey == "":
		errs = append(errs, fmt.Errorf("%s (or %s) is required with %s=openai", EnvOpenAIAPIKey, EnvAPIKey, EnvProvider))
	}
	if c.Model != "" && c.Provider != OpenAI {
		errs = append(errs, fmt.Errorf("%s is set but only %s=openai takes a model: unset it", EnvModel, EnvProvider))
	}
	return errors.Join(errs...)
}

// checkURL accepts an absolute http(s) URL with a host.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: the scheme must be http or https", s)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}

// endpoint joins a base URL and a path.
func endpoint(base, path string) string {
	return strings.TrimRight(base, "/") + path
}

// clampMax bounds a requested result count to [1, most].
func clampMax(n, most int) int {
	return min(max(n, 1), most)
}
