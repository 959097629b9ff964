// Package offline is a deterministic research policy behind the llm.Model
// interface. It is NOT a language model: it reads the conversation, picks
// the next tools by fixed rules (split a multi-part question into
// sub-agents, search, read, message a sibling whose reason matches a
// finding, wait, read messages) and writes an extractive report: the
// sentences of what it read that best match the task, with numbered sources.
// Offered the tools for it, it asks its owner which aspect to focus on and
// steers its searches by the answer (ask_owner), and proposes its
// sub-agents before it spawns any, following the decision (propose_plan).
// It lets demos, tests and benchmarks drive the real agent loop with no
// network and no key.
//
// It may import jobs/llm only.
package offline

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

// Name is recorded as the model of runs made by this policy.
const Name = "offline (deterministic policy, not a language model)"

// Model is the offline policy.
type Model struct {
	// Delay is slept at each call, to stand for a model's latency in tests
	// and demos; zero for none.
	Delay time.Duration
}

// Name implements llm.Model.
func (m *Model) Name() string { return Name }

// SpanModel is the policy's short model id in traces ("chat offline"),
// where Name, a sentence, would make a poor span name (jobs.SpanModel).
func (m *Model) SpanModel() string { return "offline" }

// Complete implements llm.Model: it decides the next turn from the request.
func (m *Model) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if m.Delay > 0 {
		select {
		case <-time.After(m.Delay):
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
	}
	s := readState(req)
	msg := llm.Message{Role: llm.RoleAssistant}
	if !req.MayCallTools() {
		msg.Content = s.report()
	} else {
		msg.ToolCalls = s.next(req)
		if len(msg.ToolCalls) == 0 {
			msg.Content = s.report()
		}
	}
	for i := range msg.ToolCalls {
		msg.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", s.turns+1, i+1)
	}
	return llm.Response{Message: msg, Usage: usage(req, msg)}, nil
}

// EstimateUsage is the most a request may use: its prompt, counted as
// Complete counts it, and the request's completion cap.
func (m *Model) EstimateUsage(req llm.Request) llm.Usage {
	u := usage(req, llm.Message{})
	u.CompletionTokens = req.MaxCompletionTokens
	return u
}

// usage estimates tokens as four characters each, as the offline policy has
// no tokenizer; it costs nothing.
func usage(req llm.Request, out llm.Message) llm.Usage {
	in := len(req.System)
	for _, m := range req.Messages {
		in += len(m.Content)
		for _, c := range m.ToolCalls {
			in += len(c.Arguments)
		}
	}
	outLen := len(out.Content)
	for _, c := range out.ToolCalls {
		outLen += len(c.Arguments) + len(c.Name)
	}
	return llm.Usage{PromptTokens: (in + 3) / 4, CompletionTokens: (outLen + 3) / 4}
}

func call(name string, args any) llm.ToolCall {
	b, _ := json.Marshal(args)
	return llm.ToolCall{Name: name, Arguments: b}
}

// next picks the tool calls of the coming step, or none to write the report.
func (s *state) next(req llm.Request) []llm.ToolCall {
	var calls []llm.ToolCall
	if s.opening() {
		if req.HasTool(toolAskOwner) && !s.used[toolAskOwner] {
			return []llm.ToolCall{s.askCall()} // alone: the call parks the research
		}
		switch {
		case !req.HasTool("spawn_subagent"):
		case req.HasTool(toolProposePlan):
			if !s.used[toolProposePlan] {
				if c, ok := s.planCall(); ok {
					return []llm.ToolCall{c}
				}
			}
			calls = spawnCalls(s.approved) // none after a rejection or no decision
		case len(splitQuestion(s.task)) >= 2:
			calls = spawnCalls(s.facets())
		}
		if req.HasTool("search") {
			q := cmp.Or(s.focus.packageQuery(), s.focus.query(8))
			calls = append(calls, call("search", map[string]any{"query": q, "limit": 10}))
		}
		return append(calls, s.webCalls(req)...)
	}
	if s.searches == 1 && len(s.hits) == 0 && s.focus.packageQuery() != "" && req.HasTool("search") {
		// No package of that name: search the question's words.
		return []llm.ToolCall{call("search", map[string]any{"query": s.focus.query(8), "limit": 10})}
	}
	unread := s.toRead()
	calls = append(calls, s.webCalls(req)...)
	if s.more != nil {
		// The rest of the document that matches the question best.
		return append(calls, call("read", map[string]any{"id": s.more.id, "offset": s.more.offset}))
	}
	if s.reads == 0 && len(unread) > 0 {
		calls = append(calls, call("read", map[string]any{"id": unread[0].id}))
		if req.HasTool("list_siblings") && !s.used["list_siblings"] {
			calls = append(calls, call("list_siblings", map[string]any{}))
		}
		return calls
	}
	if req.HasTool("send_message") && s.used["list_siblings"] && !s.used["send_message"] {
		if to, text := s.finding(); to != "" {
			calls = append(calls, call("send_message", map[string]any{"to": to, "text": text}))
		}
	}
	if s.reads < 2 && len(unread) > 0 {
		calls = append(calls, call("read", map[string]any{"id": unread[0].id}))
	}
	if req.HasTool("remember") && !s.used["remember"] && len(s.docs) > 0 {
		d := s.docs[0]
		if sent := bestSentences(s.focus, []source{d}, 1); len(sent) > 0 {
			calls = append(calls, call("remember", map[string]any{
				"title": "Finding on " + keywords(firstQuestion(s.task), 4),
				"text":  sent[0].text + " (from " + d.title + ", " + d.url + ")",
			}))
		}
	}
	if len(calls) > 0 {
		return calls
	}
	if s.used["spawn_subagent"] && !s.used["wait_subagents"] {
		return []llm.ToolCall{call("wait_subagents", map[string]any{})}
	}
	if req.HasTool("read_messages") && s.moreMessages() {
		wait := 0
		if s.siblingsWorking {
			wait = 2
		}
		return []llm.ToolCall{call("read_messages", map[string]any{"wait_seconds": wait})}
	}
	return nil
}

// moreMessages says whether to read messages (again): once, and a second
// time when some messages came but fewer than the siblings that were
// working, which may still be sending theirs.
func (s *state) moreMessages() bool {
	switch s.messageReads {
	case 0:
		return true
	case 1:
		return s.siblingsWorking && len(s.messages) > 0 && len(s.messages) < s.working
	}
	return false
}

// withPackage adds to each part that names no package the one package
// the whole question names, if it names exactly one: "How does
// URLEncoding differ from StdEncoding?" of a question on encoding/base64
// is asked of encoding/base64.
func withPackage(parts []string, question string) []string {
	var pkgs []string
	for _, m := range packageMentionRE.FindAllStringSubmatch(question, -1) {
		if p := strings.ToLower(m[1] + m[2] + m[3]); p != "" && !stopwords[p] && !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) != 1 {
		return parts
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p
		if !packageMentionRE.MatchString(p) {
			out[i] = strings.TrimSuffix(p, "?") + " in the " + pkgs[0] + " package?"
		}
	}
	return out
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
