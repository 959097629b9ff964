package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

// MissQuery is a search no document matches: the cheapest tool call there
// is, a query of the knowledge base that finds nothing.
const MissQuery = "zzqqxxnothing"

// scriptUsage is what every scripted answer reports: tokens, at no cost.
var scriptUsage = llm.Usage{PromptTokens: 100, CompletionTokens: 10}

// answer completes a scripted reply: its role, ids for its tool calls.
func answer(req llm.Request, msg llm.Message) llm.Response {
	msg.Role = llm.RoleAssistant
	for i := range msg.ToolCalls {
		msg.ToolCalls[i].ID = fmt.Sprintf("c%d_%d", len(req.Messages), i)
	}
	return llm.Response{Message: msg, Usage: scriptUsage}
}

func call(name string, args any) llm.ToolCall {
	b, _ := json.Marshal(args)
	return llm.ToolCall{Name: name, Arguments: b}
}

// Topic is the first user message of a request: the run's topic or task.
func Topic(req llm.Request) string {
	if i := slices.IndexFunc(req.Messages, func(m llm.Message) bool { return m.Role == llm.RoleUser }); i >= 0 {
		return req.Messages[i].Content
	}
	return ""
}

// Turns counts the assistant turns of a conversation so far.
func Turns(req llm.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}

// ToolModel is a deterministic model that answers at once: on every step
// that offers tools it calls search once, and on the last step, which
// offers none, it writes its report. It is not a language model.
type ToolModel struct {
	// Query is the search of a run, by its topic; nil searches MissQuery.
	Query func(topic string) string
}

// Name implements llm.Model.
func (m *ToolModel) Name() string { return "gb bench: one search a step (not a language model)" }

// Complete implements llm.Model.
func (m *ToolModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	if !req.MayCallTools() {
		return answer(req, llm.Message{Content: "report: nothing more to add"}), nil
	}
	q := MissQuery
	if m.Query != nil {
		q = m.Query(Topic(req))
	}
	return answer(req, llm.Message{ToolCalls: []llm.ToolCall{call("search", map[string]any{"query": q, "limit": 3})}}), nil
}

// Tree shapes of TreeModel.
const (
	// TreeKids is how many sub-agents each root spawns.
	TreeKids = 3
	// RootSteps are a root's steps: spawn, wait, report.
	RootSteps = 3
	// KidSteps are a sub-agent's steps: one search, then its report.
	KidSteps = 2
	// TreeSteps are the steps of a whole tree.
	TreeSteps = RootSteps + TreeKids*KidSteps
)

// RootTopic is the topic of root i of TreeModel.
func RootTopic(i int) string { return fmt.Sprintf("gb bench tree %d", i) }

// TreeModel is a deterministic model of research trees: a root (topic
// RootTopic(i)) spawns TreeKids sub-agents, waits for them and writes its
// report; each sub-agent searches once and reports. It is not a language
// model.
type TreeModel struct {
	// Gates, when set, holds each sub-agent's first call until its root
	// has parked, so that every root waits for its sub-agents.
	Gates *ParkGates
}

// Name implements llm.Model.
func (m *TreeModel) Name() string { return "gb bench: spawn, wait, report (not a language model)" }

// Complete implements llm.Model.
func (m *TreeModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	var r, c int
	if _, err := fmt.Sscanf(Topic(req), "gb bench sub-agent %d.%d", &r, &c); err == nil {
		if m.Gates != nil && Turns(req) == 0 {
			if err := m.Gates.wait(ctx, r); err != nil {
				return llm.Response{}, err
			}
		}
		if !req.MayCallTools() {
			return answer(req, llm.Message{Content: fmt.Sprintf("sub-agent %d.%d: nothing found", r, c)}), nil
		}
		return answer(req, llm.Message{ToolCalls: []llm.ToolCall{call("search", map[string]any{"query": MissQuery})}}), nil
	}
	if _, err := fmt.Sscanf(Topic(req), "gb bench tree %d", &r); err != nil {
		return llm.Response{}, fmt.Errorf("%w: unexpected topic %q", llm.ErrPermanent, Topic(req))
	}
	if !req.MayCallTools() || Turns(req) >= 2 {
		return answer(req, llm.Message{Content: fmt.Sprintf("tree %d: the sub-agents found nothing", r)}), nil
	}
	if Turns(req) == 1 {
		return answer(req, llm.Message{ToolCalls: []llm.ToolCall{call("wait_subagents", map[string]any{})}}), nil
	}
	calls := make([]llm.ToolCall, TreeKids)
	for k := range calls {
		calls[k] = call("spawn_subagent", map[string]any{"name": fmt.Sprintf("c%d", k), "reason": fmt.Sprintf("part %d", k),
			"task": fmt.Sprintf("gb bench sub-agent %d.%d", r, k), "max_steps": KidSteps})
	}
	return answer(req, llm.Message{ToolCalls: calls}), nil
}

// Latency wraps a model: each call waits Delay first, as a real model's
// latency would, and the calls in progress are counted.
type Latency struct {
	Model llm.Model
	Delay time.Duration
	now   atomic.Int64
	peak  atomic.Int64
}

// Name implements llm.Model.
func (l *Latency) Name() string { return l.Model.Name() }

// Complete implements llm.Model.
func (l *Latency) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	n := l.now.Add(1)
	defer l.now.Add(-1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	if l.Delay > 0 {
		t := time.NewTimer(l.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
	}
	return l.Model.Complete(ctx, req)
}

// Peak is the most calls that were in progress at once.
func (l *Latency) Peak() int64 { return l.peak.Load() }

// ParkGates hold each root's sub-agents in their first model call until the
// root has parked (committed its wait_subagents step), as a real model's
// latency would; otherwise a sub-agent could end before its parent waits.
type ParkGates struct {
	mu    sync.Mutex
	gates []chan struct{} // by root number
	index map[int64]int   // root run id -> root number
	early map[int64]bool  // roots that parked before their id was known here
}

// NewParkGates makes the gates of roots 0 to n-1.
func NewParkGates(n int) *ParkGates {
	g := &ParkGates{index: map[int64]int{}, early: map[int64]bool{}}
	for range n {
		g.gates = append(g.gates, make(chan struct{}))
	}
	return g
}

// Committed is the hook of StepTimes: step 2 of a root is its wait.
func (g *ParkGates) Committed(id int64, step int) {
	if step != 2 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if i, ok := g.index[id]; ok {
		close(g.gates[i])
	} else {
		g.early[id] = true
	}
}

// Started records that root i is run id.
func (g *ParkGates) Started(i int, id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.index[id] = i
	if g.early[id] {
		close(g.gates[i])
	}
}

func (g *ParkGates) wait(ctx context.Context, i int) error {
	if i < 0 || i >= len(g.gates) {
		return fmt.Errorf("no gate for root %d", i)
	}
	select {
	case <-g.gates[i]:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
