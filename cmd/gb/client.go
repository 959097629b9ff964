package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// clientTimeout bounds one request, long polls (up to 25 s) included.
const clientTimeout = 40 * time.Second

// apiClient calls the REST API with the user's key.
type apiClient struct {
	base string
	key  string
	http *http.Client
}

// apiError is an error answer of the API.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("the API answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// newAPIClient is the client of GB_API_URL with GB_API_KEY; without a key
// it fails with an authentication error.
func newAPIClient() (*apiClient, error) {
	key := os.Getenv("GB_API_KEY")
	if key == "" {
		return nil, authError(fmt.Errorf("GB_API_KEY is not set; create a key with: gb keys create --user NAME"))
	}
	base := strings.TrimRight(os.Getenv("GB_API_URL"), "/")
	if base == "" {
		base = "http://127.0.0.1:8080"
	}
	return &apiClient{base: base, key: key, http: &http.Client{Timeout: clientTimeout}}, nil
}

// do sends a request and decodes a JSON answer into out; an error answer
// becomes an error carrying the API's message.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("error encoding request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("error building request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("cannot reach the API at %s (is gb dev running? set GB_API_URL): %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("error reading answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		ae := decodeAPIError(resp.StatusCode, data)
		if ae.Message == "" {
			ae.Message = fmt.Sprintf("HTTP %d from %s %s", resp.StatusCode, method, path)
		}
		if resp.StatusCode == http.StatusUnauthorized {
			return authError(fmt.Errorf("the API at %s refused GB_API_KEY: %w", c.base, ae))
		}
		return ae
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("error decoding answer: %w", err)
		}
	}
	return nil
}

// decodeAPIError is the error of an answer with status and body data, with
// the API's code and message when the body has them.
func decodeAPIError(status int, data []byte) *apiError {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	return &apiError{Status: status, Code: e.Error.Code, Message: e.Error.Message}
}
