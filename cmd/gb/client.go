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

// apiClient calls the REST API with the user's key.
type apiClient struct {
	base string
	key  string
	http *http.Client
}

func newAPIClient() (*apiClient, error) {
	key := os.Getenv("GB_API_KEY")
	if key == "" {
		return nil, fmt.Errorf("GB_API_KEY is not set; create a key with: gb keys create --user NAME")
	}
	base := strings.TrimRight(os.Getenv("GB_API_URL"), "/")
	if base == "" {
		base = "http://127.0.0.1:8080"
	}
	return &apiClient{base: base, key: key, http: &http.Client{Timeout: 30 * time.Second}}, nil
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
	if err != nil {
		return fmt.Errorf("cannot reach the API at %s (is gb dev running? set GB_API_URL): %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("error reading answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("%s (HTTP %d)", e.Error.Message, resp.StatusCode)
		}
		return fmt.Errorf("HTTP %d from %s %s", resp.StatusCode, method, path)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("error decoding answer: %w", err)
		}
	}
	return nil
}
