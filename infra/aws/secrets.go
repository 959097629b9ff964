package aws

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/search"
)

// SecretGetter is the Secrets Manager call the functions make.
type SecretGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput,
		optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// ResolveSecrets reads the secrets the settings name into the settings:
// DATABASE_SECRET_ARN into DatabaseURL (see DatabaseURLFromSecret) and,
// when modelKey is set, OPENAI_SECRET_ARN into OpenAIKey and
// GB_SEARCH_SECRET_ARN into Search.APIKey (see OpenAIKeyFromSecret; the
// openai search provider takes the model's key when it has none of its
// own). Only the function that calls the model and the web (the worker)
// reads their keys. Errors start with the variable's name.
func ResolveSecrets(ctx context.Context, sm SecretGetter, cfg *config.Config, modelKey bool) error {
	if cfg.DatabaseSecretARN != "" {
		s, err := readSecret(ctx, sm, cfg.DatabaseSecretARN)
		if err != nil {
			return fmt.Errorf("%s: %w", config.EnvDatabaseSecretARN, err)
		}
		u, err := DatabaseURLFromSecret(cfg.DatabaseURL, s)
		if err != nil {
			return fmt.Errorf("%s: %w", config.EnvDatabaseSecretARN, err)
		}
		cfg.DatabaseURL = u
	}
	if modelKey && cfg.OpenAISecretARN != "" {
		s, err := readSecret(ctx, sm, cfg.OpenAISecretARN)
		if err != nil {
			return fmt.Errorf("%s: %w", config.EnvOpenAISecretARN, err)
		}
		key, err := OpenAIKeyFromSecret(s)
		if err != nil {
			return fmt.Errorf("%s: %w", config.EnvOpenAISecretARN, err)
		}
		cfg.OpenAIKey = key
	}
	if modelKey && cfg.SearchSecretARN != "" {
		s, err := readSecret(ctx, sm, cfg.SearchSecretARN)
		if err != nil {
			return fmt.Errorf("%s: %w", config.EnvSearchSecretARN, err)
		}
		key, err := OpenAIKeyFromSecret(s)
		if err != nil {
			return fmt.Errorf("%s: %w", config.EnvSearchSecretARN, err)
		}
		cfg.Search.APIKey = key
	}
	if modelKey && cfg.Search.Provider == search.OpenAI && cfg.Search.APIKey == "" {
		cfg.Search.APIKey = cfg.OpenAIKey
	}
	return nil
}

func readSecret(ctx context.Context, sm SecretGetter, arn string) (string, error) {
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: awssdk.String(arn)})
	if err != nil {
		return "", fmt.Errorf("error reading secret %s: %w", arn, err)
	}
	switch {
	case out.SecretString != nil:
		return *out.SecretString, nil
	case out.SecretBinary != nil:
		return string(out.SecretBinary), nil
	}
	return "", fmt.Errorf("secret %s has no value", arn)
}

// dbSecret is the JSON of a database secret as RDS and Secrets Manager's
// rotation templates write it.
type dbSecret struct {
	Username string          `json:"username"`
	Password string          `json:"password"`
	Host     string          `json:"host"`
	Port     json.RawMessage `json:"port"`
	DBName   string          `json:"dbname"`
}

// DatabaseURLFromSecret returns the connection URL made of a database
// secret and the URL from DATABASE_URL (base, may be empty).
//
// A secret holding a postgres:// URL is used as it is. Otherwise it is the
// JSON object RDS writes (username, password, host, port, dbname): the
// credentials always come from it; where to connect comes from base when
// set (so DATABASE_URL can point at an RDS Proxy endpoint, or add
// settings), else from the secret, with sslmode=require.
func DatabaseURLFromSecret(base, secret string) (string, error) {
	secret = strings.TrimSpace(secret)
	if strings.HasPrefix(secret, "postgres://") || strings.HasPrefix(secret, "postgresql://") {
		return secret, nil
	}
	var s dbSecret
	if err := json.Unmarshal([]byte(secret), &s); err != nil {
		return "", fmt.Errorf("the secret is neither a postgres:// URL nor a JSON object with username and password: %w", err)
	}
	if s.Username == "" || s.Password == "" {
		return "", errors.New("the secret has no username or no password")
	}
	var u *url.URL
	if base != "" {
		var err error
		if u, err = url.Parse(base); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return "", fmt.Errorf("with a secret, %s must be a postgres:// URL (got an unparsable or other value)", config.EnvDatabaseURL)
		}
	} else {
		if s.Host == "" {
			return "", fmt.Errorf("the secret has no host, and %s does not say where to connect", config.EnvDatabaseURL)
		}
		port := strings.Trim(string(s.Port), `"`)
		if port == "" || port == "null" {
			port = "5432"
		}
		if _, err := strconv.Atoi(port); err != nil {
			return "", fmt.Errorf("the secret's port %q is not a number", port)
		}
		u = &url.URL{Scheme: "postgres", Host: net.JoinHostPort(s.Host, port), Path: "/" + cmp.Or(s.DBName, "postgres"),
			RawQuery: "sslmode=require"}
	}
	u.User = url.UserPassword(s.Username, s.Password)
	return u.String(), nil
}

// OpenAIKeyFromSecret returns the API key in a secret: the secret itself,
// or its api_key (or OPENAI_API_KEY) field when it is a JSON object.
func OpenAIKeyFromSecret(secret string) (string, error) {
	secret = strings.TrimSpace(secret)
	if !strings.HasPrefix(secret, "{") {
		if secret == "" {
			return "", errors.New("the secret is empty")
		}
		return secret, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(secret), &m); err != nil {
		return "", fmt.Errorf("the secret is a JSON object but not one of strings: %w", err)
	}
	for _, k := range []string{"api_key", config.EnvOpenAIKey} {
		if v := strings.TrimSpace(m[k]); v != "" {
			return v, nil
		}
	}
	return "", errors.New("the secret's JSON has no api_key field")
}
