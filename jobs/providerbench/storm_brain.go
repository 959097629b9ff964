package providerbench

import (
	"fmt"
	"strings"

	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs/kb"
)

// The trees of the crash storm: what they search and how they act.

// stormDocs are the dataset the sub-agents search.
var stormDocs = []kb.Document{
	{Source: "storm/tides", Title: "Tides", Body: "Tides rise and fall twice a day in most harbours, pulled by the moon."},
	{Source: "storm/winds", Title: "Winds", Body: "Winds at sea shift with the pressure; a falling glass warns of a storm."},
	{Source: "storm/harbour", Title: "Harbour", Body: "A harbour wall breaks the swell, so that ships ride out a storm at anchor."},
}

// crewBrain plays the trees of the storm. A root spawns SubagentsPerTree
// sub-agents, waits for them and writes its report from theirs: the
// findings of those that succeeded and nothing else, so a root whose
// sub-agents all failed answers with a blank text, as a model with nothing
// to write does. Each sub-agent, part i, takes steps tool steps in turn
// (two searches of the knowledge base, a message to the next part, a read
// of its messages waiting up to 2 s, which blocks inside the step), then
// reports its findings.
func crewBrain(steps int) openaifake.Brain {
	return func(req *openaifake.Request) openaifake.Answer {
		t, k := task(req), turns(req)
		switch {
		case strings.HasPrefix(t, "part "):
			if k >= steps || !mayCall(req) {
				return openaifake.Answer{Content: fmt.Sprintf("Findings of %s: %d steps, the tides, the winds and the harbour.", t, k)}
			}
			return partCall(t, k)
		case !mayCall(req):
			return rootReport(req, t)
		case k == 0 && offers(req, "spawn_subagent"):
			var a openaifake.Answer
			for i := 1; i <= SubagentsPerTree; i++ {
				a.ToolCalls = append(a.ToolCalls, openaifake.ToolCall{ID: fmt.Sprintf("call_spawn_%d", i),
					Name: "spawn_subagent", Arguments: fmt.Sprintf(
						`{"name":"part%d","reason":"part %d is a question of its own","task":"part %d of %s","max_steps":%d}`,
						i, i, i, t, steps+1)})
			}
			return a
		case k == 1 && offers(req, "wait_subagents"):
			return openaifake.Answer{ToolCalls: []openaifake.ToolCall{{ID: "call_wait", Name: "wait_subagents", Arguments: `{}`}}}
		}
		return rootReport(req, t)
	}
}

// partCall is the tool call of a sub-agent's turn k.
func partCall(t string, k int) openaifake.Answer {
	var part int
	fmt.Sscanf(t, "part %d of", &part)
	id := fmt.Sprintf("call_%d", k+1)
	var c openaifake.ToolCall
	switch k % 4 {
	case 0, 1:
		c = openaifake.ToolCall{ID: id, Name: "search", Arguments: `{"query":"storm harbour tides"}`}
	case 2:
		c = openaifake.ToolCall{ID: id, Name: "send_message", Arguments: fmt.Sprintf(
			`{"to":"part%d","text":"part%d has read %d results"}`, part%SubagentsPerTree+1, part, k)}
	default:
		c = openaifake.ToolCall{ID: id, Name: "read_messages", Arguments: `{"wait_seconds":2}`}
	}
	return openaifake.Answer{ToolCalls: []openaifake.ToolCall{c}}
}

// rootReport is a root's report: its sub-agents' findings, one a line,
// or a blank text when it has none.
func rootReport(req *openaifake.Request, t string) openaifake.Answer {
	var found []string
	for _, m := range req.Messages {
		if m.Role != "tool" {
			continue
		}
		for _, line := range strings.Split(m.Content, "\n") {
			if strings.HasPrefix(line, "Findings of part ") {
				found = append(found, "- "+line)
			}
		}
	}
	if len(found) == 0 {
		return openaifake.Answer{Content: "\n"}
	}
	return openaifake.Answer{Content: fmt.Sprintf("Report on %s.\n\n%s\n", t, strings.Join(found, "\n"))}
}
