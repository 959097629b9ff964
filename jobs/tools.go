package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// Tool names.
const (
	toolSearch         = "search"
	toolRead           = "read"
	toolRemember       = "remember"
	toolSpawnSubagent  = "spawn_subagent"
	toolWaitSubagents  = "wait_subagents"
	toolCancelSubagent = "cancel_subagent"
	toolListSiblings   = "list_siblings"
	toolSendMessage    = "send_message"
	toolReadMessages   = "read_messages"
)

// toolEnv is what a tool sees: the step's transaction and the locked run.
type toolEnv struct {
	agent *Agent
	tx    pgx.Tx
	run   *Run
	step  int
	// callID is the id of the tool call being run.
	callID string
	// park is set by wait_subagents when the run must wait for sub-agents.
	park *parkRequest
	// ended is set when a tool ended the run itself.
	ended bool
}

// toolError is a failure the model is told about as the tool's result; any
// other error is an infrastructure failure that fails the step.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErrorf(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...)}
}

type tool struct {
	spec  llm.ToolSpec
	state string
	run   func(ctx context.Context, env *toolEnv, args json.RawMessage) (string, error)
}

var tools = map[string]*tool{}

func register(t *tool) { tools[t.spec.Name] = t }

// decodeArgs reads a tool's JSON arguments strictly: unknown fields and
// trailing data are errors the model is told about.
func decodeArgs(raw json.RawMessage, v any, shape string) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return toolErrorf("invalid arguments (%s); expected %s", err.Error(), shape)
	}
	if dec.More() {
		return toolErrorf("invalid arguments (trailing data); expected %s", shape)
	}
	return nil
}

// runTool runs one tool call. Tool errors become the result text; only
// infrastructure errors are returned.
func (a *Agent) runTool(ctx context.Context, env *toolEnv, call llm.ToolCall) (string, error) {
	t, ok := tools[call.Name]
	if !ok || !a.offers(env.run, call.Name) {
		return "Error: there is no tool named " + fmt.Sprintf("%q", call.Name) + "; your tools are: " +
			strings.Join(a.toolNamesFor(env.run), ", "), nil
	}
	env.callID = call.ID
	result, err := t.run(ctx, env, call.Arguments)
	var te *toolError
	if errors.As(err, &te) {
		result, err = "Error: "+te.msg, nil
	}
	if err != nil {
		return "", fmt.Errorf("tool %s of run %d: %w", call.Name, env.run.ID, err)
	}
	if err := addEvent(ctx, env.tx, env.run, EventTool, map[string]any{"step": env.step, "tool": call.Name,
		"error": te != nil}); err != nil {
		return "", err
	}
	return result, nil
}

// toolsState is the state a step's tool calls put the agent in.
func toolsState(calls []llm.ToolCall) string {
	if len(calls) == 0 {
		return StateWriting
	}
	if t, ok := tools[calls[0].Name]; ok {
		return t.state
	}
	return StateThinking
}

// toolNamesFor lists the tools a run is given, in a stable order.
func (a *Agent) toolNamesFor(run *Run) []string {
	names := []string{toolSearch, toolRead, toolRemember}
	if run.Depth < MaxSubagentDepth {
		names = append(names, toolSpawnSubagent, toolWaitSubagents, toolCancelSubagent)
	}
	if !run.IsRoot() && a.messenger != nil {
		names = append(names, toolListSiblings, toolSendMessage, toolReadMessages)
	}
	return names
}

func (a *Agent) offers(run *Run, name string) bool {
	for _, n := range a.toolNamesFor(run) {
		if n == name {
			return true
		}
	}
	return false
}

// request builds the model request of a step: the system prompt of the
// run's place in its tree, the conversation and the tools it may call.
func (a *Agent) request(run *Run, msgs []llm.Message, last, outOfBudget bool) (llm.Request, error) {
	parts := []string{prompts.Research, prompts.Knowledge}
	canSpawn := run.Depth < MaxSubagentDepth
	if canSpawn {
		parts = append(parts, prompts.Spawn)
	}
	if !run.IsRoot() {
		sub, err := prompts.Subagent(prompts.SubagentData{Name: run.Name, Reason: run.Reason, CanSpawn: canSpawn})
		if err != nil {
			return llm.Request{}, err
		}
		parts = append(parts, sub)
		if a.messenger != nil {
			parts = append(parts, prompts.Messaging)
		}
	}
	req := llm.Request{System: prompts.Join(parts...), Messages: msgs}
	switch {
	case outOfBudget:
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: budgetNote})
	case last:
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: lastStepNote})
	default:
		for _, n := range a.toolNamesFor(run) {
			req.Tools = append(req.Tools, tools[n].spec)
		}
	}
	return req, nil
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolSearch,
			Description: "Search the knowledge base of this research. Returns ranked documents with id, title, source and a snippet.",
			Parameters: schema(`{"type":"object","properties":{"query":{"type":"string","description":"keywords, at most 500 characters"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":10}},"required":["query"],"additionalProperties":false}`)},
		state: StateSearching,
		run:   runSearch,
	})
	register(&tool{
		spec: llm.ToolSpec{Name: toolRead,
			Description: "Read one document of the knowledge base by its id (from search).",
			Parameters:  schema(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":false}`)},
		state: StateReading,
		run:   runRead,
	})
	register(&tool{
		spec: llm.ToolSpec{Name: toolRemember,
			Description: "Store a short note of a finding, with its source, in the knowledge base, where the other agents of this research find it.",
			Parameters: schema(`{"type":"object","properties":{"title":{"type":"string"},"text":{"type":"string","description":"at most 10000 characters"}},` +
				`"required":["title","text"],"additionalProperties":false}`)},
		state: StateWriting,
		run:   runRemember,
	})
}

func runSearch(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := decodeArgs(raw, &args, `{"query": "keywords", "limit": 1..10}`); err != nil {
		return "", err
	}
	args.Query = strings.TrimSpace(args.Query)
	if args.Query == "" || len(args.Query) > kb.MaxQueryLen {
		return "", toolErrorf("query must be 1 to %d characters", kb.MaxQueryLen)
	}
	if args.Limit < 0 || args.Limit > kb.MaxResults {
		return "", toolErrorf("limit must be 1 to %d", kb.MaxResults)
	}
	hits, err := kb.Search(ctx, env.tx, env.run.Dataset, args.Query, cmpOr(args.Limit, 5))
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return fmt.Sprintf("No documents match %q. Try other words.", args.Query), nil
	}
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "[id %d] %s (%s)\n%s\n\n", h.ID, h.Title, h.Source, h.Snippet)
	}
	return strings.TrimSpace(b.String()), nil
}

func runRead(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args struct {
		ID int64 `json:"id"`
	}
	if err := decodeArgs(raw, &args, `{"id": document id}`); err != nil {
		return "", err
	}
	d, err := kb.Read(ctx, env.tx, env.run.Dataset, args.ID)
	if errors.Is(err, kb.ErrNotFound) {
		return "", toolErrorf("no document with id %d in this research's knowledge base; use an id from search", args.ID)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("[id %d] %s (%s)\n\n%s", d.ID, d.Title, d.Source, d.Body), nil
}

func runRemember(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	if err := decodeArgs(raw, &args, `{"title": "...", "text": "..."}`); err != nil {
		return "", err
	}
	if strings.TrimSpace(args.Title) == "" || len(args.Title) > 200 {
		return "", toolErrorf("title must be 1 to 200 characters")
	}
	if strings.TrimSpace(args.Text) == "" || len(args.Text) > kb.MaxNoteLen {
		return "", toolErrorf("text must be 1 to %d characters", kb.MaxNoteLen)
	}
	id, err := kb.Remember(ctx, env.tx, env.run.Dataset, env.run.ID, args.Title, args.Text)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Remembered as document %d.", id), nil
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
