package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// cutOffCompletion is a chat completion whose tool call was cut off by the
// completion limit.
const cutOffCompletion = `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-mini",
	"choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":null,
	"tool_calls":[{"id":"call_cut_1","type":"function","function":{"name":"search","arguments":"{\"query\": \"tidal ener"}}]}}],
	"usage":{"prompt_tokens":300,"completion_tokens":16,"total_tokens":316}}`

const reportCompletion = `{"id":"c2","object":"chat.completion","created":2,"model":"gpt-4o-mini",
	"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"the report"}}],
	"usage":{"prompt_tokens":400,"completion_tokens":20,"total_tokens":420}}`

// chatServer is a chat-completions endpoint that answers cutOffCompletion,
// then reportCompletion, and keeps the request bodies.
type chatServer struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	n := len(s.bodies)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if n == 1 {
		_, _ = io.WriteString(w, cutOffCompletion)
		return
	}
	_, _ = io.WriteString(w, reportCompletion)
}

func (s *chatServer) body(i int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

// stepJobsRetried counts a tree's step jobs (a job may make several steps
// in a row) and those that needed more than one attempt or recorded an
// error.
func stepJobsRetried(t *testing.T, pool *pgxpool.Pool) (all, retried int) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `SELECT count(*),
			count(*) FILTER (WHERE attempt > 1 OR coalesce(array_length(errors, 1), 0) > 0 OR state <> 'completed')
		FROM river_job WHERE kind = 'gb_step'`).Scan(&all, &retried)
	if err != nil {
		t.Fatal(err)
	}
	return all, retried
}

// A tool call cut off by the completion limit (finish_reason=length), from
// the real OpenAI client: the model call succeeds, the step commits on its
// first attempt with the tool's answer that the arguments are not valid
// JSON, and the next request replays the call as valid JSON.
func TestCutOffArgumentsAreAToolResult(t *testing.T) {
	t.Parallel()
	srv := &chatServer{}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	model, err := openai.New(openai.Config{BaseURL: hs.URL + "/v1", APIKey: "sk-test", Model: "gpt-4o-mini",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, setupOpts{model: model})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "tidal energy"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Report != "the report" || done.Steps != 2 {
		t.Fatalf("%s after %d steps: %q %q", done.Status, done.Steps, done.Error, done.Report)
	}
	if all, retried := stepJobsRetried(t, b.pool); all == 0 || retried != 0 {
		t.Errorf("%d step jobs, %d retried or failed; want some and none", all, retried)
	}

	var second struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.body(1), &second); err != nil {
		t.Fatal(err)
	}
	var replayed, result string
	for _, m := range second.Messages {
		for _, c := range m.ToolCalls {
			if c.ID == "call_cut_1" {
				replayed = c.Function.Arguments
			}
		}
		if m.Role == "tool" && m.ToolCallID == "call_cut_1" {
			result = m.Content
		}
	}
	if !strings.HasPrefix(result, "Error: invalid arguments (not valid JSON: unexpected end of JSON input); expected {\"query\"") {
		t.Errorf("tool result = %q, want the invalid JSON reported", result)
	}
	if !json.Valid([]byte(replayed)) || !strings.Contains(replayed, `tidal ener`) {
		t.Errorf("replayed arguments = %q, want valid JSON quoting what the model sent", replayed)
	}
}

// Whatever bytes any model puts in a call's arguments, the tool answers
// and the step commits on its first attempt.
func TestBadArgumentsOfAnyModelAreToolResults(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	results := map[string]string{}
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		if turns(req) == 0 {
			return llm.Message{ToolCalls: []llm.ToolCall{
				{ID: "cut", Name: "search", Arguments: json.RawMessage(`{"query": "tid`)},
				{ID: "utf8", Name: "search", Arguments: json.RawMessage("{\"query\":\"ti\xffdes\"}")},
				{ID: "string", Name: "read", Arguments: json.RawMessage(`"42"`)},
				{ID: "nul", Name: "remember", Arguments: json.RawMessage("{\"title\":\"a\x00\"}")},
				{ID: "none", Name: "search"},
			}}, nil
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range req.Messages {
			if m.Role == llm.RoleTool {
				results[m.ToolCallID] = m.Content
			}
		}
		return llm.Message{Content: "done"}, nil
	}}
	b := setup(t, setupOpts{model: model})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, run.ID, 30*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	if all, retried := stepJobsRetried(t, b.pool); all == 0 || retried != 0 {
		t.Errorf("%d step jobs, %d retried or failed; want some and none", all, retried)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{
		"cut":    "invalid arguments (not valid JSON: unexpected end of JSON input)",
		"utf8":   "invalid arguments (text must be valid UTF-8; the byte at offset 12 is not)",
		"string": "invalid arguments (not a JSON object)",
		"nul":    "invalid arguments (not valid JSON: invalid character '\\x00' in string literal)",
		"none":   "query must be 1 to 500 characters",
	}
	for id, w := range want {
		if got := results[id]; !strings.HasPrefix(got, "Error: "+w) {
			t.Errorf("%s: result %q, want an error starting %q", id, got, w)
		}
	}
}

// A NUL (a JSON \u0000 escape) in any string argument of any tool is a
// tool error: the run goes on and every step commits on its first attempt.
func TestNULInEveryToolInputIsAToolError(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	var mu sync.Mutex
	results := map[string]string{}
	collect := func(req llm.Request) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range req.Messages {
			if m.Role == llm.RoleTool {
				results[m.ToolCallID] = m.Content
			}
		}
	}
	call := func(id, name, args string) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	accents := strings.Repeat("é", 200)
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		collect(req)
		alpha := topic(req) == "task of alpha"
		switch {
		case alpha && turns(req) == 0:
			return llm.Message{ToolCalls: []llm.ToolCall{
				call("m1", "send_message", `{"to":"beta\u0000","text":"hi"}`),
				call("m2", "send_message", `{"to":"beta","text":"hi\u0000"}`),
				call("m3", "list_siblings", `{}`),
			}}, nil
		case alpha:
			return llm.Message{Content: "alpha report"}, nil
		case turns(req) == 0:
			return llm.Message{ToolCalls: []llm.ToolCall{
				call("s1", "search", `{"query":"context\u0000"}`),
				call("r1", "remember", `{"title":"t\u0000","text":"x"}`),
				call("r2", "remember", `{"title":"t","text":"x\u0000"}`),
				call("p1", "spawn_subagent", `{"name":"a\u0000","reason":"r","task":"t"}`),
				call("p2", "spawn_subagent", `{"name":"a","reason":"r\u0000","task":"t"}`),
				call("p3", "spawn_subagent", `{"name":"a","reason":"r","task":"t\u0000"}`),
				call("w1", "wait_subagents", `{"names":["alpha\u0000"]}`),
				call("k1", "cancel_subagent", `{"name":"alpha\u0000"}`),
				call("p4", "spawn_subagent", `{"name":"alpha","reason":"`+accents+`","task":"task of alpha"}`),
			}}, nil
		case turns(req) == 1:
			return llm.Message{ToolCalls: []llm.ToolCall{call("w2", "wait_subagents", `{}`)}}, nil
		default:
			return llm.Message{Content: "root report"}, nil
		}
	}}
	b := setupOn(t, pool, setupOpts{model: model, msgr: withMessenger(t, pool)})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root research"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Report != "root report" || done.Steps != 3 {
		t.Fatalf("root: %s after %d steps, %q", done.Status, done.Steps, done.Error)
	}
	if all, retried := stepJobsRetried(t, b.pool); all == 0 || retried != 0 {
		t.Errorf("%d step jobs, %d retried or failed; want some and none", all, retried)
	}
	tree, err := jobs.Tree(ctx, b.pool, run.ID)
	if err != nil || len(tree) != 2 || tree[1].Reason != accents || tree[1].Status != jobs.StatusSucceeded {
		t.Fatalf("tree: %v, %v; want alpha, spawned with a 200-character reason, succeeded", tree, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{
		"s1": "query must not contain NUL characters",
		"r1": "title must not contain NUL characters",
		"r2": "text must not contain NUL characters",
		"p1": "name must not contain NUL characters",
		"p2": "reason must not contain NUL characters",
		"p3": "task must not contain NUL characters",
		"w1": "names must not contain NUL characters",
		"k1": "name must not contain NUL characters",
		"m1": "to must not contain NUL characters",
		"m2": "text must not contain NUL characters",
	}
	for id, w := range want {
		if got := results[id]; got != "Error: "+w {
			t.Errorf("%s: result %q, want %q", id, got, "Error: "+w)
		}
	}
	if got := results["p4"]; !strings.HasPrefix(got, `started sub-agent "alpha"`) {
		t.Errorf("valid spawn: %q", got)
	}
	if got := results["w2"]; !strings.Contains(got, "alpha report") {
		t.Errorf("wait: %q", got)
	}
}

// Every length limit counts characters, not bytes: "é" is one character
// of two bytes.
func TestLengthLimitsCountCharacters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	b := setupOn(t, pool, setupOpts{noWork: true, msgr: withMessenger(t, pool)})
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	e := func(n int) string { return strings.Repeat("é", n) }
	alpha, err := b.agent.SpawnForTest(ctx, root.ID, jobs.SpawnParams{Name: "alpha", Reason: e(200), Task: e(jobs.MaxTaskLen)})
	if err != nil {
		t.Fatalf("200 × é as a reason: %v", err)
	}
	if alpha.Reason != e(200) || alpha.Topic != e(jobs.MaxTaskLen) {
		t.Errorf("spawned with reason of %d bytes, task of %d bytes", len(alpha.Reason), len(alpha.Topic))
	}
	if _, err := b.agent.SpawnForTest(ctx, root.ID, jobs.SpawnParams{Name: "beta", Reason: e(jobs.MaxReasonLen), Task: "t"}); err != nil {
		t.Errorf("300 × é as a reason: %v", err)
	}
	_, err = b.agent.SpawnForTest(ctx, root.ID, jobs.SpawnParams{Name: "gamma", Reason: e(jobs.MaxReasonLen + 1), Task: "t"})
	if !jobs.IsToolError(err) || !strings.Contains(err.Error(), "reason is 301 characters; at most 300 are allowed") {
		t.Errorf("301 × é as a reason: %v", err)
	}
	tool := func(run *jobs.Run, name, args string) string {
		out, err := b.agent.RunToolForTest(ctx, run.ID, name, args)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := tool(root, "remember", `{"title":"`+e(200)+`","text":"`+e(10000)+`"}`); !strings.HasPrefix(got, "Remembered as document") {
		t.Errorf("200 × é title, 10000 × é text: %q", got)
	}
	if got := tool(root, "search", `{"query":"`+e(500)+`"}`); !strings.HasPrefix(got, "No documents match") {
		t.Errorf("500 × é query: %q", got)
	}
	if got := tool(alpha, "send_message", `{"to":"beta","text":"`+e(10000)+`"}`); !strings.HasPrefix(got, "sent to beta") {
		t.Errorf("10000 × é message: %q", got)
	}
	if err := b.agent.SendFromUser(ctx, alpha, e(jobs.MaxMessageLen)); err != nil {
		t.Errorf("10000 × é from the owner: %v", err)
	}
	for text, want := range map[string]string{
		e(jobs.MaxMessageLen + 1): "text: is 10001 characters; at most 10000 are allowed",
		"  ":                      "text: must be 1 to 10000 characters",
		"a\x00b":                  "text: must not contain NUL characters",
		"a\xffb":                  "text: must be valid UTF-8",
	} {
		var fe *jobs.FieldError
		if err := b.agent.SendFromUser(ctx, alpha, text); !errors.As(err, &fe) || err.Error() != want {
			t.Errorf("owner message %.20q: %v, want %q", text, err, want)
		}
	}
}
