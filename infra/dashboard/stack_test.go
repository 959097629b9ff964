package dashboard_test

import (
	"context"
	"go/build"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/messenger"
)

// stack is what `gb dev` runs, built in the test: the API (and so the
// dashboard) over a fresh database with a worker on the offline model (whose
// interactive roots ask a question, askingModel) and the Postgres
// messenger.
type stack struct {
	pool   *pgxpool.Pool
	agent  *jobs.Service
	srv    *httptest.Server
	key    string
	userID int64
	// eventPolls counts the requests for events, longPolls those that
	// asked to wait; with ignoreWait set, the server does not see wait.
	eventPolls, longPolls atomic.Int64
	// streams counts the requests for event streams; with noStream set,
	// they are answered 501, as behind a gateway that cannot stream.
	streams    atomic.Int64
	noStream   atomic.Bool
	ignoreWait bool
	// longPollsOf counts the long polls by path (/v1/gb/research/ID/events).
	mu          sync.Mutex
	longPollsOf map[string]int
	// gate, once armed, holds every model call until a browser script
	// posts to /e2e/release: a script that must see a tree grow sees it
	// before the tree's first step, however slow the machine.
	gate *modelGate
}

// modelGate holds model calls while armed, until it is released.
type modelGate struct {
	mu       sync.Mutex
	armed    bool
	released chan struct{}
}

// arm makes later model calls wait for release.
func (g *modelGate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.released = true, make(chan struct{})
}

// release lets every held and later model call through; it may be called
// more than once.
func (g *modelGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.armed {
		g.armed = false
		close(g.released)
	}
}

// wait returns once the gate is not armed, or with ctx's error.
func (g *modelGate) wait(ctx context.Context) error {
	g.mu.Lock()
	armed, released := g.armed, g.released
	g.mu.Unlock()
	if !armed {
		return nil
	}
	select {
	case <-released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// longPollsFor is how many long polls asked for the events of run id.
func (s *stack) longPollsFor(id int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.longPollsOf["/v1/gb/research/"+strconv.FormatInt(id, 10)+"/events"]
}

// startStack serves a stack with a small Go-docs dataset and one user's
// key; everything stops when the test ends.
func startStack(t *testing.T, modelDelay time.Duration, ignoreWait bool) *stack {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	loadGoDocs(t, pool)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	listener := messenger.NewListener(pool, logger)
	if err := listener.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Stop(context.Background()) })
	gate := &modelGate{}
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: askingModel{&offline.Model{Delay: modelDelay}, gate}, Logger: logger,
		Messenger: messenger.NewPostgres(pool, listener, messenger.PostgresConfig{}), Work: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = agent.Stop(sctx)
	})
	key, err := jobs.CreateKey(ctx, pool, "browser")
	if err != nil {
		t.Fatal(err)
	}
	uid, err := jobs.UserID(ctx, pool, "browser")
	if err != nil {
		t.Fatal(err)
	}
	st := &stack{pool: pool, agent: agent, key: key, userID: uid, ignoreWait: ignoreWait, longPollsOf: map[string]int{}, gate: gate}
	api := httpapi.New(httpapi.Deps{Service: agent, Logger: logger})
	st.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/e2e/release" && r.Method == http.MethodPost {
			gate.release()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/events/stream") {
			st.streams.Add(1)
			if st.noStream.Load() {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotImplemented)
				_, _ = w.Write([]byte(`{"error":{"code":"stream_unavailable","message":"this gateway buffers answers"}}`))
				return
			}
		}
		if strings.HasSuffix(r.URL.Path, "/events") {
			st.eventPolls.Add(1)
			if r.URL.Query().Get("wait") != "" && r.URL.Query().Get("wait") != "0" {
				st.longPolls.Add(1)
				st.mu.Lock()
				st.longPollsOf[r.URL.Path]++
				st.mu.Unlock()
			}
			if st.ignoreWait {
				q := r.URL.Query()
				q.Del("wait")
				r.URL.RawQuery = q.Encode()
			}
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(st.srv.Close)
	return st
}

// askingModel is the offline model, except that an interactive root asks
// its owner one question first (askedQuestion), then reports the answer
// ask_owner gave it, and a root that must have its plan approved proposes
// one sub-agent (plannedName), then reports what propose_plan answered.
type askingModel struct {
	llm.Model
	gate *modelGate
}

// plannedName is the sub-agent askingModel's planning roots propose.
const plannedName = "routers"

// askedQuestion is what askingModel's interactive roots ask.
const askedQuestion = "Which Go version should the research cover?"

// Complete implements llm.Model.
func (m askingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := m.gate.wait(ctx); err != nil {
		return llm.Response{}, err
	}
	if slices.ContainsFunc(req.Tools, func(t llm.ToolSpec) bool { return t.Name == "propose_plan" }) {
		return m.plan(req), nil
	}
	if !slices.ContainsFunc(req.Tools, func(t llm.ToolSpec) bool { return t.Name == "ask_owner" }) {
		return m.Model.Complete(ctx, req)
	}
	msg := llm.Message{Role: llm.RoleAssistant}
	for _, c := range req.Messages {
		if c.Role == llm.RoleTool && c.Name == "ask_owner" {
			msg.Content = "# Answered\n\nThe owner answered: " + c.Content
		}
	}
	if msg.Content == "" {
		msg.ToolCalls = []llm.ToolCall{llm.NewToolCall("ask", "ask_owner", `{"question":"`+askedQuestion+`"}`)}
	}
	return llm.Response{Message: msg, Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 10}}, nil
}

// plan is the step of a root that must have its plan approved: it
// proposes plannedName, then reports the decision it was told.
func (m askingModel) plan(req llm.Request) llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant}
	for _, c := range req.Messages {
		if c.Role == llm.RoleTool && c.Name == "propose_plan" {
			msg.Content = "# Planned\n\n" + c.Content
		}
	}
	if msg.Content == "" {
		msg.ToolCalls = []llm.ToolCall{llm.NewToolCall("plan", "propose_plan", `{"subagents":[{"name":"`+plannedName+
			`","reason":"routers are one area","task":"compare Go's HTTP routers"}]}`)}
	}
	return llm.Response{Message: msg, Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 10}}
}

// loadGoDocs loads the documentation of the packages the demo topic asks
// about as the default dataset.
func loadGoDocs(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	src := filepath.Join(build.Default.GOROOT, "src")
	var paths []string
	for _, p := range []string{"context", "sync", "time", "errors", "net/http", "io"} {
		paths = append(paths, filepath.Join(src, p))
	}
	docs, err := kb.FromPaths(paths)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Load(context.Background(), pool, jobs.DefaultDataset, docs); err != nil {
		t.Fatal(err)
	}
}

// waitEnded polls a run until it ends.
func waitEnded(t *testing.T, pool *pgxpool.Pool, id int64, within time.Duration) *jobs.Run {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		run, err := jobs.GetRun(context.Background(), pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Ended() {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d did not end within %s: %s, %s", id, within, run.Status, run.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
