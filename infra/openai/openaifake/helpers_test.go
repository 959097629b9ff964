package openaifake

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	oai "github.com/sashabaranov/go-openai"
)

const testKey = "sk-test-openaifake-0123456789"

// clock is a settable clock for Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// start starts a server with cfg, the test key and, unless cfg has one,
// a clock of its own; it is closed when the test ends.
func start(t *testing.T, cfg Config) (*Server, *clock) {
	t.Helper()
	clk := newClock()
	if cfg.Now == nil {
		cfg.Now = clk.Now
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	srv := New(cfg)
	t.Cleanup(srv.Close)
	return srv, clk
}

// reply is a response read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// post sends body (a string of JSON, or a value to encode) to the
// chat-completions endpoint with key.
func post(t *testing.T, srv *Server, key string, body any) reply {
	t.Helper()
	return postCtx(t, context.Background(), srv, key, body)
}

func postCtx(t *testing.T, ctx context.Context, srv *Server, key string, body any) reply {
	t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatalf("encoding the request: %v", err)
		}
		raw = string(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(raw))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// chat is a request body of one user message.
func chat(model, content string, extra map[string]any) map[string]any {
	body := map[string]any{"model": model, "messages": []map[string]any{{"role": "user", "content": content}}}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

// apiErr is the decoded body of an error response.
type apiErr struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// wantError checks an error response's status and body, null param and
// code written as "".
func wantError(t *testing.T, r reply, status int, typ, param, code, message string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	var body struct {
		Error *apiErr `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.Error == nil {
		t.Fatalf("body %s is not an error body: %v", r.body, err)
	}
	e := body.Error
	if e.Type != typ || deref(e.Param) != param || deref(e.Code) != code {
		t.Errorf("error = type %q param %q code %q, want %q %q %q", e.Type, deref(e.Param), deref(e.Code), typ, param, code)
	}
	if (param == "") != (e.Param == nil) || (code == "") != (e.Code == nil) {
		t.Errorf("param %v / code %v: an empty one must be null in %s", e.Param, e.Code, r.body)
	}
	if message != "" && e.Message != message {
		t.Errorf("message = %q\nwant      %q", e.Message, message)
	}
}

// completionBody is the part of an answer the tests read, decoded loosely
// so that missing and null fields can be told apart.
type completionBody struct {
	Choices []struct {
		Message      map[string]json.RawMessage `json:"message"`
		FinishReason string                     `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

func decodeCompletion(t *testing.T, r reply) completionBody {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", r.status, r.body)
	}
	var c completionBody
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatalf("answer %s: %v", r.body, err)
	}
	return c
}

// client is a go-openai client of srv with key.
func client(srv *Server, key string) *oai.Client {
	cfg := oai.DefaultConfig(key)
	cfg.BaseURL = srv.URL()
	return oai.NewClientWithConfig(cfg)
}

func userMessage(content string) []oai.ChatCompletionMessage {
	return []oai.ChatCompletionMessage{{Role: oai.ChatMessageRoleUser, Content: content}}
}

// words is n tokens of text: n words of four letters.
func words(n int, first string) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = "abcd"
	}
	ws[0] = first
	return strings.Join(ws, " ")
}

// hasBytes reports whether b holds sub.
func hasBytes(b []byte, sub string) bool { return bytes.Contains(b, []byte(sub)) }
