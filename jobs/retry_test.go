package jobs_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

func TestPermanentModelErrorFailsTheRunClearly(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	model := &scriptModel{fn: func(context.Context, llm.Request) (llm.Message, error) {
		calls.Add(1)
		return llm.Message{}, errors.Join(errors.New("malformed response: no choices"), llm.ErrPermanent)
	}}
	b := setup(t, setupOpts{model: model})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, run.ID, 20*time.Second)
	if done.Status != jobs.StatusFailed || !strings.Contains(done.Error, "malformed response: no choices") {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	if calls.Load() != 1 {
		t.Fatalf("a permanent error was retried: %d calls", calls.Load())
	}
}

func TestLastStepHasNoToolsAndEndsWithAReport(t *testing.T) {
	t.Parallel()
	var sawNoTools atomic.Bool
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		if !req.MayCallTools() {
			sawNoTools.Store(true)
			return llm.Message{Content: "final report"}, nil
		}
		// Never stops on its own: keeps searching.
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", `{"query":"context"}`)}}, nil
	}}
	b := setup(t, setupOpts{model: model})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "q", MaxSteps: 3})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, run.ID, 20*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Report != "final report" || done.Steps != 3 || !sawNoTools.Load() {
		t.Fatalf("%s steps %d report %q", done.Status, done.Steps, done.Report)
	}
}

func TestToolErrorsAreResults(t *testing.T) {
	t.Parallel()
	var results []string
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		switch turns(req) {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{
				toolCall("read", `{"id": 999999}`),
				toolCall("search", `{"query": ""}`),
				toolCall("search", `{"q": "x"}`),
				toolCall("wait_subagents", `{}`),
				toolCall("teleport", `{}`),
			}}, nil
		default:
			for _, m := range req.Messages {
				if m.Role == llm.RoleTool {
					results = append(results, m.Content)
				}
			}
			return llm.Message{Content: "done"}, nil
		}
	}}
	b := setup(t, setupOpts{model: model})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, run.ID, 20*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	want := []string{"no document with id 999999", "query must be 1 to 500", "unknown field", "no sub-agents to wait for", `no tool named "teleport"`}
	if len(results) != len(want) {
		t.Fatalf("results %q", results)
	}
	for i, w := range want {
		if !strings.HasPrefix(results[i], "Error: ") || !strings.Contains(results[i], w) {
			t.Errorf("result %d = %q, want an error containing %q", i, results[i], w)
		}
	}
}
