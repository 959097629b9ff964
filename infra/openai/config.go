package openai

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
)

// Defaults that New puts in the zero fields of a Config, and the one limit
// of the retry policy that is not configurable (RetryAfterMax).
const (
	// BaseURLDefault is OpenAI's public API, version 1.
	BaseURLDefault = "https://api.openai.com/v1"
	// ModelDefault is the model used when none is configured.
	ModelDefault = "gpt-4o-mini"
	// MaxRetriesDefault is how many times a retryable failure is retried
	// (so at most MaxRetriesDefault+1 requests per call).
	MaxRetriesDefault = 4
	// BackoffBaseDefault is the wait before the first retry; it doubles at
	// each further retry, with jitter.
	BackoffBaseDefault = 200 * time.Millisecond
	// BackoffMaxDefault caps the wait between two attempts.
	BackoffMaxDefault = 5 * time.Second
	// RetryAfterMax is the longest Retry-After a server may ask for and be
	// obeyed; a longer or missing one falls back to the backoff.
	RetryAfterMax = 30 * time.Second
)

// Environment variables read by ConfigFromEnv.
const (
	// EnvBaseURL overrides BaseURLDefault.
	EnvBaseURL = "OPENAI_BASE_URL"
	// EnvAPIKey holds the API key (required).
	EnvAPIKey = "OPENAI_API_KEY"
	// EnvModel names the model, e.g. gpt-4.1-mini.
	EnvModel = "GB_MODEL"
)

// Config configures a Model. Zero fields take the defaults above.
type Config struct {
	// BaseURL is the API root the chat-completions path is appended to,
	// e.g. https://api.openai.com/v1. It must be an http or https URL.
	BaseURL string
	// APIKey is the bearer token. Required. It is never logged.
	APIKey string
	// Model is the model name sent with each request and returned by Name.
	Model string
	// HTTPClient makes the requests; nil means a client with no overall
	// timeout, so the caller's context bounds each call.
	HTTPClient *http.Client
	// MaxRetries is how many times a retryable failure is retried: zero
	// means MaxRetriesDefault, a negative value means never retry.
	MaxRetries int
	// BackoffBase is the wait before the first retry (zero: default).
	BackoffBase time.Duration
	// BackoffMax caps the wait between attempts (zero: default).
	BackoffMax time.Duration
	// Logger receives warnings (an unknown price, retries); nil means
	// slog.Default().
	Logger *slog.Logger
}

// ConfigFromEnv reads OPENAI_BASE_URL, OPENAI_API_KEY and GB_MODEL through
// getenv (os.Getenv when nil). Unset variables leave the field empty, to be
// defaulted (or, for the key, rejected) by New.
func ConfigFromEnv(getenv func(string) string) Config {
	if getenv == nil {
		getenv = os.Getenv
	}
	return Config{
		BaseURL: strings.TrimSpace(getenv(EnvBaseURL)),
		APIKey:  strings.TrimSpace(getenv(EnvAPIKey)),
		Model:   strings.TrimSpace(getenv(EnvModel)),
	}
}

// String describes the configuration without the API key.
func (c Config) String() string {
	return fmt.Sprintf("openai.Config{BaseURL: %q, Model: %q, APIKey: %s, MaxRetries: %d}",
		c.BaseURL, c.Model, redacted(c.APIKey), c.MaxRetries)
}

// GoString is String, so that %#v does not print the API key either.
func (c Config) GoString() string { return c.String() }

// LogValue implements slog.LogValuer so that logging a Config never prints
// the API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", c.BaseURL),
		slog.String("model", c.Model),
		slog.String("api_key", redacted(c.APIKey)),
		slog.Int("max_retries", c.MaxRetries),
	)
}

func redacted(key string) string {
	if key == "" {
		return "(unset)"
	}
	return "(set)"
}

// withDefaults fills the zero fields and checks the result.
func (c Config) withDefaults() (Config, error) {
	c.BaseURL = cmp.Or(strings.TrimSpace(c.BaseURL), BaseURLDefault)
	c.Model = cmp.Or(strings.TrimSpace(c.Model), ModelDefault)
	c.APIKey = strings.TrimSpace(c.APIKey)
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = MaxRetriesDefault
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	c.BackoffBase = cmp.Or(c.BackoffBase, BackoffBaseDefault)
	c.BackoffMax = cmp.Or(c.BackoffMax, BackoffMaxDefault)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}

	var errs []error
	if c.APIKey == "" {
		errs = append(errs, fmt.Errorf("missing API key (set %s)", EnvAPIKey))
	}
	if err := checkBaseURL(c.BaseURL); err != nil {
		errs = append(errs, err)
	}
	if c.BackoffBase < 0 || c.BackoffMax < 0 {
		errs = append(errs, errors.New("negative backoff"))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("openai config: %w", err)
	}
	c.BackoffMax = max(c.BackoffMax, c.BackoffBase)
	return c, nil
}

func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("base URL %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("base URL %q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return fmt.Errorf("base URL %q: no host", s)
	}
	return nil
}
