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
)

// Defaults that New puts in the zero fields of a Config.
const (
	// BaseURLDefault is OpenAI's public API, version 1.
	BaseURLDefault = "https://api.openai.com/v1"
	// ModelDefault is the model used when none is configured.
	ModelDefault = "gpt-4o-mini"
)

// Environment variables read by ConfigFromEnv.
const (
	// EnvBaseURL overrides BaseURLDefault.
	EnvBaseURL = "OPENAI_BASE_URL"
	// EnvAPIKey holds the API key (required).
	EnvAPIKey = "OPENAI_API_KEY"
	// EnvModel names the model, e.g. gpt-4.1-mini.
	EnvModel = "GB_MODEL"
	// EnvModelProfiles describes models or corrects the table: a JSON
	// object keyed by model name (see ParseProfiles).
	EnvModelProfiles = "GB_MODEL_PROFILES"
	// EnvReasoningEffort is sent as reasoning_effort to reasoning models:
	// minimal, low, medium or high (unset: not sent).
	EnvReasoningEffort = "GB_REASONING_EFFORT"
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
	// Logger receives warnings (an unknown model, a dropped tool call);
	// nil means slog.Default().
	Logger *slog.Logger
	// Profiles describe models or correct the table, by model name (exact,
	// or without the date of a snapshot). See ProfileOverride.
	Profiles map[string]ProfileOverride
	// ReasoningEffort is sent as reasoning_effort to reasoning models:
	// EffortMinimal, EffortLow, EffortMedium, EffortHigh, or "" for none.
	ReasoningEffort string
}

// ConfigFromEnv reads OPENAI_BASE_URL, OPENAI_API_KEY, GB_MODEL,
// GB_MODEL_PROFILES and GB_REASONING_EFFORT through getenv (os.Getenv when
// nil). Unset variables leave the field empty, to be defaulted (or, for the
// key, rejected) by New; the error names the variable that is invalid.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Config{
		BaseURL: strings.TrimSpace(getenv(EnvBaseURL)),
		APIKey:  strings.TrimSpace(getenv(EnvAPIKey)),
		Model:   strings.TrimSpace(getenv(EnvModel)),
	}
	var errs []error
	var err error
	if c.Profiles, err = ParseProfiles(getenv(EnvModelProfiles)); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvModelProfiles, err))
	}
	if c.ReasoningEffort, err = ParseReasoningEffort(getenv(EnvReasoningEffort)); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvReasoningEffort, err))
	}
	return c, errors.Join(errs...)
}

// String describes the configuration without the API key.
func (c Config) String() string {
	return fmt.Sprintf("openai.Config{BaseURL: %q, Model: %q, APIKey: %s, ReasoningEffort: %q, Profiles: %d}",
		c.BaseURL, c.Model, redacted(c.APIKey), c.ReasoningEffort, len(c.Profiles))
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
		slog.String("reasoning_effort", c.ReasoningEffort),
		slog.Int("profiles", len(c.Profiles)),
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
	var err error
	if c.ReasoningEffort, err = ParseReasoningEffort(c.ReasoningEffort); err != nil {
		errs = append(errs, fmt.Errorf("reasoning effort %w", err))
	}
	for model, o := range c.Profiles {
		if err := validateOverride(model, o); err != nil {
			errs = append(errs, fmt.Errorf("profiles: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("openai config: %w", err)
	}
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
