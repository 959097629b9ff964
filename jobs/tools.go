package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

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
	toolWebSearch      = "web_search"
	toolFetch          = "fetch"
	toolReadReport     = "read_report"
	toolSendInput      = "send_input"
	toolAskOwner       = "ask_owner"
	toolProposePlan    = "propose_plan"
)

// toolEnv is what a tool sees: the step's transaction and the locked run.
type toolEnv struct {
	agent *Agent
	tx    pgx.Tx
	run   *Run
	step  int
	// callID is the id of the tool call being run.
	callID string
	// park is set by the call of the step that must wait: wait_subagents,
	// a long read_messages or ask_owner.
	park *parkRequest
	// events and sources are those of the step's tools, recorded with
	// the step.
	events  []pendingEvent
	sources []Source
}

// toolError is a failure the model is told about as the tool's result; any
// other error is an infrastructure failure that fails the step.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErrorf(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...)}
}

// tool is one tool of the registry. A read-only tool has read, which runs
// before the step's transaction (readonly.go); any other has run, which
// runs inside it with the tree locked.
type tool struct {
	spec  llm.ToolSpec
	state string
	read  func(ctx context.Context, env *readEnv, args json.RawMessage) (readResult, error)
	run   func(ctx context.Context, env *toolEnv, args json.RawMessage) (string, error)
}

var tools = map[string]*tool{}

func register(t *tool) { tools[t.spec.Name] = t }

// decodeArgs reads a tool's JSON arguments into v, a pointer to the tool's
// argument struct, strictly, and checks every string in them: arguments
// that are not UTF-8, not JSON (a reply cut off by the completion limit),
// not one object, with an unknown field or a field of the wrong type, or
// with a string Postgres cannot store, are a toolError that says what was
// wrong and what was expected. No arguments at all are {}.
func decodeArgs(raw json.RawMessage, v any, shape string) error {
	if err := unmarshalArgs(raw, v); err != nil {
		return toolErrorf("invalid arguments (%s); expected %s", err.Error(), shape)
	}
	return checkStrings(reflect.ValueOf(v), "arguments")
}

// unmarshalArgs decodes raw into v: one JSON object in valid UTF-8, with
// no unknown field. The content of its strings is checkStrings' part.
func unmarshalArgs(raw []byte, v any) error {
	// encoding/json would quietly turn bytes that are not UTF-8 into U+FFFD.
	if !utf8.Valid(raw) {
		return fmt.Errorf("text must be valid UTF-8; the byte at offset %d is not", invalidUTF8At(raw))
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, new(json.RawMessage)); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if raw[0] != '{' {
		return errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// invalidUTF8At is the offset of the first byte of b that is not UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// checkStrings finds a string in v, decoded arguments, that Postgres could
// not store, and names its field in the toolError. A JSON \u0000 escape
// decodes to a NUL, which no text or jsonb column accepts.
func checkStrings(v reflect.Value, field string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return checkStrings(v.Elem(), field)
		}
	case reflect.String:
		if p := encodingProblem(v.String()); p != "" {
			return toolErrorf("%s %s", field, p)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := checkStrings(v.Index(i), field); err != nil {
				return err
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if err := checkStrings(it.Key(), field); err != nil {
				return err
			}
			if err := checkStrings(it.Value(), field); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				if err := checkStrings(v.Field(i), jsonName(f)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// jsonName is the name of a struct field in JSON.
func jsonName(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
		return name
	}
	return f.Name
}

// encodingProblem says why Postgres could not store s, or "" when it can.
func encodingProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain NUL characters"
	}
	return ""
}

// textProblem says what is wrong with s as a text of 1 to max characters
// (runes, not bytes) that Postgres can store, or "" when nothing is.
func textProblem(s string, max int) string {
	if p := encodingProblem(s); p != "" {
		return p
	}
	switch n := utf8.RuneCountInString(s); {
	case n == 0:
		return fmt.Sprintf("must be 1 to %d characters", max)
	case n > max:
		return fmt.Sprintf("is %d characters; at most %d are allowed", n, max)
	}
	return ""
}

// checkText is the check of every text argument a tool stores or sends:
// 1 to max characters that Postgres can store, as a toolError naming field.
func checkText(field, s string, max int) error {
	if p := textProblem(s, max); p != "" {
		return toolErrorf("%s %s", field, p)
	}
	return nil
}

// runTool runs one tool call. Tool errors become the result text; only
// infrastructure errors are returned.
func (a *Agent) runTool(ctx context.Context, env *toolEnv, call llm.ToolCall) (string, error) {
	t, ok := tools[call.Name]
	if ok && !a.offers(env.run, call.Name) && slices.Contains(a.placeTools(env.run), call.Name) {
		// The run's type does not allow it: refused, and recorded.
		allowed := strings.Join(a.toolNamesFor(env.run), ", ")
		if err := addEvent(ctx, env.tx, env.run, EventBlocked, map[string]any{"step": env.step, "tool": call.Name,
			"type": env.run.AgentType}); err != nil {
			return "", err
		}
		return fmt.Sprintf("Error: a %s sub-agent may not call %s; its tools are: %s", env.run.AgentType, call.Name, allowed), nil
	}
	if !ok || !a.offers(env.run, call.Name) {
		return a.noSuchTool(env.run, call.Name), nil
	}
	env.callID = call.ID
	tctx, endSpan := a.startTool(ctx, env.run, env.step, call)
	result, err := t.run(tctx, env, json.RawMessage(call.ArgumentsText()))
	var te *toolError
	if errors.As(err, &te) {
		result, err = "Error: "+te.msg, nil
	}
	endSpan(te != nil, err)
	if err != nil {
		return "", fmt.Errorf("tool %s of run %d: %w", call.Name, env.run.ID, err)
	}
	env.events = append(env.events, pendingEvent{kind: EventTool, data: map[string]any{"step": env.step,
		"tool": call.Name, "error": te != nil}})
	return result, nil
}

// noSuchTool is the answer to a call of a tool the run does not have.
func (a *Agent) noSuchTool(run *Run, name string) string {
	return fmt.Sprintf("Error: there is no tool named %q; your tools are: %s", name, strings.Join(a.toolNamesFor(run), ", "))
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

// toolNamesFor lists the tools a run is given, in a stable order: those of
// its place in the tree, within its type's allow-list.
func (a *Agent) toolNamesFor(run *Run) []string {
	names := a.placeTools(run)
	if at := a.runType(run); at != nil {
		names = slices.DeleteFunc(names, func(n string) bool { return !at.allows(n) })
	}
	return names
}

// placeTools lists the tools of a run's place in its tree.
func (a *Agent) placeTools(run *Run) []string {
	names := []string{toolSearch, toolRead, toolRemember}
	if a.web() {
		names = append(names, toolWebSearch, toolFetch)
	}
	if run.Depth < MaxSubagentDepth && run.MaxSubagents > 0 {
		names = append(names, toolSpawnSubagent, toolWaitSubagents, toolCancelSubagent, toolReadReport)
		if a.messenger != nil {
			names = append(names, toolSendInput)
		}
	}
	if !run.IsRoot() && a.messenger != nil {
		names = append(names, toolListSiblings, toolSendMessage, toolReadMessages)
	}
	if asksOwner(run) {
		names = append(names, toolAskOwner)
	}
	if mustPlan(run) && slices.Contains(names, toolSpawnSubagent) {
		names = append(names, toolProposePlan)
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
	if a.web() {
		parts = append(parts, prompts.Web)
	}
	canSpawn := run.Depth < MaxSubagentDepth && run.MaxSubagents > 0
	if canSpawn {
		parts = append(parts, prompts.Spawn)
	}
	if asksOwner(run) {
		parts = append(parts, prompts.AskOwner)
	}
	if canSpawn && mustPlan(run) {
		parts = append(parts, prompts.ProposePlan)
	}
	if !run.IsRoot() {
		sub, err := prompts.Subagent(prompts.SubagentData{Name: run.Name, Reason: run.Reason, CanSpawn: canSpawn})
		if err != nil {
			return llm.Request{}, err
		}
		parts = append(parts, sub)
		if at := a.runType(run); at != nil {
			parts = append(parts, at.Prompt)
		}
		if a.messenger != nil {
			parts = append(parts, prompts.Messaging)
		}
	}
	req := llm.Request{System: prompts.Join(parts...), Messages: msgs}
	// The tools stay listed on the last step, only forbidden, so that the
	// prompt keeps the prefix the provider has cached.
	for _, n := range a.toolNamesFor(run) {
		req.Tools = append(req.Tools, a.toolSpec(n))
	}
	switch {
	case outOfBudget:
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: budgetNote})
		req.ToolChoice = llm.ToolChoiceNone
	case last:
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: lastStepNote})
		req.ToolChoice = llm.ToolChoiceNone
	}
	return req, nil
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// toolSpec is a tool's spec as a model sees it: spawn_subagent's type
// takes its enum and description from the registry of types.
func (a *Agent) toolSpec(name string) llm.ToolSpec {
	spec := tools[name].spec
	if name != toolSpawnSubagent {
		return spec
	}
	var params map[string]any
	if json.Unmarshal(spec.Parameters, &params) != nil {
		return spec
	}
	props, _ := params["properties"].(map[string]any)
	if props == nil {
		return spec
	}
	props["type"] = map[string]any{"type": "string", "enum": a.types.Names(),
		"description": "the sub-agent's type (default " + DefaultType + "): " + a.types.describe()}
	if len(a.models) > 1 {
		props["model"] = map[string]any{"type": "string", "enum": a.modelNames(),
			"description": "the sub-agent's model (default: yours)"}
	}
	if b, err := json.Marshal(params); err == nil {
		spec.Parameters = b
	}
	return spec
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
