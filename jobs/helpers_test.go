package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/bench"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/messenger"
)

type testBundle struct {
	pool   *pgxpool.Pool
	agent  *jobs.Service
	userID int64
}

type setupOpts struct {
	model  llm.Model
	noWork bool
	config jobs.Config
	msgr   jobs.Messenger
}

// setup makes a fresh database with a small Go-docs dataset, a user and a
// started agent, stopped when the test ends.
func setup(t *testing.T, o setupOpts) *testBundle {
	t.Helper()
	return setupOn(t, dbtest.NewPool(t), o)
}

// setupOn is setup on a database the test made.
func setupOn(t *testing.T, pool *pgxpool.Pool, o setupOpts) *testBundle {
	t.Helper()
	ctx := context.Background()
	loadDocs(t, pool)
	if o.model == nil {
		o.model = &offline.Model{}
	}
	a, err := jobs.New(jobs.Deps{Pool: pool, Model: o.model, Messenger: o.msgr, Work: !o.noWork, Config: o.config})
	if err != nil {
		t.Fatal(err)
	}
	if !o.noWork {
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = a.Stop(sctx)
		})
	}
	if _, err := jobs.CreateKey(ctx, pool, "alice"); err != nil {
		t.Fatal(err)
	}
	uid, err := jobs.UserID(ctx, pool, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return &testBundle{pool: pool, agent: a, userID: uid}
}

func loadDocs(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	src := filepath.Join(build.Default.GOROOT, "src")
	var paths []string
	for _, p := range []string{"context", "sync", "time", "errors", "strings", "net/http", "io", "bufio"} {
		paths = append(paths, filepath.Join(src, p))
	}
	docs, err := kb.FromPaths(paths)
	if err != nil {
		t.Fatal(err)
	}
	// FromPaths walks subdirectories too; keep only the packages asked for.
	if _, err := kb.Load(context.Background(), pool, jobs.DefaultDataset, docs); err != nil {
		t.Fatal(err)
	}
}

// waitEnded polls a run until it ends or the deadline passes.
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
			t.Fatalf("run %d did not end within %s: status %s state %s steps %d", id, within, run.Status, run.State, run.Steps)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scriptModel answers with a function of the request, for tests that need
// an agent to act in a set way.
type scriptModel struct {
	fn func(ctx context.Context, req llm.Request) (llm.Message, error)
}

func (m *scriptModel) Name() string { return "script" }

func (m *scriptModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := answeredInOrder(req.Messages); err != nil {
		return llm.Response{}, errors.Join(err, llm.ErrPermanent)
	}
	msg, err := m.fn(ctx, req)
	if err != nil {
		return llm.Response{}, err
	}
	msg.Role = llm.RoleAssistant
	for i := range msg.ToolCalls {
		if msg.ToolCalls[i].ID == "" {
			msg.ToolCalls[i].ID = fmt.Sprintf("c%d_%d", len(req.Messages), i)
		}
	}
	return llm.Response{Message: msg, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 10}}, nil
}

func toolCall(name, args string) llm.ToolCall {
	return llm.ToolCall{Name: name, Arguments: json.RawMessage(args)}
}

// turns counts the assistant turns of a conversation so far.
func turns(req llm.Request) int { return bench.Turns(req) }

// topic is the first user message: the run's topic or task.
func topic(req llm.Request) string { return bench.Topic(req) }

// lastToolResult is the content of the last tool message.
func lastToolResult(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleTool {
			return req.Messages[i].Content
		}
	}
	return ""
}

// withMessenger starts a message listener on pool for the test and returns
// a Postgres messenger that waits through it.
func withMessenger(t *testing.T, pool *pgxpool.Pool) *messenger.Postgres {
	t.Helper()
	listener := messenger.NewListener(pool, nil)
	if err := listener.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Stop(context.Background()) })
	return messenger.NewPostgres(pool, listener, messenger.PostgresConfig{})
}

// answeredInOrder checks a conversation the way the OpenAI chat API does:
// the tool calls of an assistant message are answered by tool messages
// that follow it at once, one per call, before any other message.
func answeredInOrder(msgs []llm.Message) error {
	for i := 0; i < len(msgs); i++ {
		if msgs[i].Role != llm.RoleAssistant || len(msgs[i].ToolCalls) == 0 {
			continue
		}
		open := map[string]bool{}
		for _, c := range msgs[i].ToolCalls {
			open[c.ID] = true
		}
		j := i + 1
		for ; j < len(msgs) && msgs[j].Role == llm.RoleTool; j++ {
			delete(open, msgs[j].ToolCallID)
		}
		if len(open) > 0 && j < len(msgs) {
			return fmt.Errorf("message %d (%s) comes before the answers to the tool calls of message %d", j, msgs[j].Role, i)
		}
	}
	return nil
}

// newUser creates the user name, with a key, and returns its id.
func newUser(t *testing.T, pool *pgxpool.Pool, name string) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := jobs.CreateKey(ctx, pool, name); err != nil {
		t.Fatal(err)
	}
	id, err := jobs.UserID(ctx, pool, name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
