package providerbench

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gbresearch/gb/infra/openai/openaifake"
)

// The brains of the scenarios: deterministic stand-ins for a model, which
// act on what the request holds the way a research model would.

// call is an answer that calls one tool.
func call(id, name, args string) openaifake.Answer {
	return openaifake.Answer{ToolCalls: []openaifake.ToolCall{{ID: id, Name: name, Arguments: args}}}
}

// mayCall reports whether the request lets the model call a tool.
func mayCall(req *openaifake.Request) bool {
	return len(req.Tools) > 0 && req.ToolChoice != "none"
}

// offers reports whether the request offers the named tool.
func offers(req *openaifake.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// turns counts the assistant messages of the conversation so far.
func turns(req *openaifake.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// task is the first user message: the topic of a root, the task of a
// sub-agent.
func task(req *openaifake.Request) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// pageURL matches the address of a page of the page server.
var pageURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+/page/\d+`)

// report is a report that cites every page the request mentions, in the
// order first mentioned: pages shown whole and pages whose result was
// replaced by a stub alike.
func report(req *openaifake.Request, what string) openaifake.Answer {
	seen := map[string]bool{}
	var b strings.Builder
	fmt.Fprintf(&b, "Report on %s.\n\nSources:\n", what)
	n := 0
	for _, m := range req.Messages {
		for _, u := range pageURL.FindAllString(m.Content, -1) {
			if !seen[u] {
				seen[u] = true
				n++
				fmt.Fprintf(&b, "[%d] %s\n", n, u)
			}
		}
	}
	return openaifake.Answer{Content: b.String()}
}

// fetchCall is an answer that fetches one page.
func fetchCall(id, url string) openaifake.Answer {
	return openaifake.Answer{ToolCalls: []openaifake.ToolCall{{ID: id, Name: "fetch",
		Arguments: fmt.Sprintf(`{"url":%q}`, url)}}}
}

// readingBrain reads a new page at every step and reports, citing them,
// when it may no longer call tools.
func readingBrain(p *pages) openaifake.Brain {
	return func(req *openaifake.Request) openaifake.Answer {
		if !mayCall(req) {
			return report(req, task(req))
		}
		k := turns(req) + 1
		return fetchCall(fmt.Sprintf("call_read_%d", k), p.URL(k))
	}
}

// SubagentsPerTree is how many sub-agents the root of a tree scenario spawns.
const SubagentsPerTree = 3

// treeBrain makes trees: a root spawns SubagentsPerTree sub-agents, waits
// for them and reports; each sub-agent fetches steps pages of its own,
// then reports.
func treeBrain(p *pages, steps int) openaifake.Brain {
	return spawningBrain(p, SubagentsPerTree, steps)
}

// spawningBrain is treeBrain with subs sub-agents.
func spawningBrain(p *pages, subs, steps int) openaifake.Brain {
	return func(req *openaifake.Request) openaifake.Answer {
		t := task(req)
		k := turns(req)
		switch {
		case !mayCall(req):
			return report(req, t)
		case strings.HasPrefix(t, "part "):
			if k >= steps {
				return report(req, t)
			}
			var tree, part int
			fmt.Sscanf(t, "part %d of tree %d", &part, &tree)
			return fetchCall(fmt.Sprintf("call_part_%d", k+1), p.URL(tree*1000+part*100+k+1))
		case k == 0 && offers(req, "spawn_subagent"):
			var a openaifake.Answer
			for i := 1; i <= subs; i++ {
				a.ToolCalls = append(a.ToolCalls, openaifake.ToolCall{ID: fmt.Sprintf("call_spawn_%d", i),
					Name: "spawn_subagent", Arguments: fmt.Sprintf(
						`{"name":"part%d","reason":"part %d needs pages of its own","task":"part %d of %s","max_steps":%d}`,
						i, i, i, t, steps+1)})
			}
			return a
		case k == 1 && offers(req, "wait_subagents"):
			return openaifake.Answer{ToolCalls: []openaifake.ToolCall{{ID: "call_wait", Name: "wait_subagents",
				Arguments: `{}`}}}
		default:
			return report(req, t)
		}
	}
}
