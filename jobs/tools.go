package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
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
	agent *Service
	tx    pgx.Tx
	run   *Run
	step  int
	// callID is the id of the tool call being run.
	callID string
	// park is set by the call of the step that must wait: wait_subagents,
	// a long read_messages or ask_owner.
	park *parkRequest
	// events and sources are those of the step's tools, recorded with
	// the step; failed names the calls that answered an error, which the
	// step's own event lists beside the tools it called.
	events  []pendingEvent
	sources []Source
	failed  []string
}

// toolError is a failure the model is told about as the tool's result; any
// other error is an infrastructure failure that fails the step.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErrorf(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...)}
}

// tool is one tool of the registry. args is the zero value of the struct
// its arguments decode into, whose declaration (toolargs.go) makes the
// spec's parameters. A read-only tool has read, which runs before the
// step's transaction (readonly.go); any other has run, which runs inside
// it with the tree locked.
type tool struct {
	spec  llm.ToolSpec
	args  any
	state string
	read  func(ctx context.Context, env *readEnv, args json.RawMessage) (readResult, error)
	run   func(ctx context.Context, env *toolEnv, args json.RawMessage) (string, error)
}

var tools = map[string]*tool{}

// register adds t to the registry, with the JSON schema of its arguments
// as its spec's parameters.
func register(t *tool) {
	b, err := json.Marshal(argSchema(reflect.TypeOf(t.args)))
	if err != nil {
		panic(fmt.Sprintf("tool %s: %v", t.spec.Name, err))
	}
	t.spec.Parameters = b
	tools[t.spec.Name] = t
}

// runTool runs one tool call. Tool errors become the result text; only
// infrastructure errors are returned.
func (a *Service) runTool(ctx context.Context, env *toolEnv, call llm.ToolCall) (string, error) {
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
	if te != nil {
		env.failed = append(env.failed, call.Name)
	}
	return result, nil
}

// noSuchTool is the answer to a call of a tool the run does not have.
func (a *Service) noSuchTool(run *Run, name string) string {
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
func (a *Service) toolNamesFor(run *Run) []string {
	names := a.placeTools(run)
	at, pinned := a.runType(run), a.pinOf(run).tools
	return slices.DeleteFunc(names, func(n string) bool {
		_, known := pinned[n] // a tool newer than the run's bundle is not offered
		return !known || (at != nil && !at.allows(n))
	})
}

// placeTools lists the tools of a run's place in its tree.
func (a *Service) placeTools(run *Run) []string {
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

func (a *Service) offers(run *Run, name string) bool {
	for _, n := range a.toolNamesFor(run) {
		if n == name {
			return true
		}
	}
	return false
}

// toolSpec is a tool's spec as the run's bundle keeps it (toolNamesFor
// offers no other).
func (a *Service) toolSpec(run *Run, name string) llm.ToolSpec { return a.pinOf(run).tools[name] }

// liveToolSpec is a tool's spec as this deploy sends it: spawn_subagent's
// type takes its enum and description from the registry of types, and its
// model is offered only when the operator allows more than one.
func (a *Service) liveToolSpec(name string) llm.ToolSpec {
	t := tools[name]
	if name != toolSpawnSubagent {
		return t.spec
	}
	params := argSchema(reflect.TypeOf(t.args))
	props := params["properties"].(map[string]any)
	props["type"] = map[string]any{"type": "string", "enum": a.types.Names(),
		"description": "the sub-agent's type (default " + DefaultType + "): " + a.types.describe(a.toolAvailable)}
	if len(a.models) > 1 {
		props["model"] = map[string]any{"type": "string", "enum": a.modelNames(),
			"description": "the sub-agent's model (default: yours)"}
	} else {
		delete(props, "model")
	}
	spec := t.spec
	if b, err := json.Marshal(params); err == nil {
		spec.Parameters = b
	}
	return spec
}
