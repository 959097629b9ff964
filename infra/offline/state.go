package offline

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/gbresearch/gb/jobs/llm"
)

// hit is one search result the policy saw.
type hit struct {
	id      int64
	title   string
	url     string
	snippet string
}

// sibling is one line of list_siblings.
type sibling struct {
	name, status, reason string
}

// state is what the policy knows, read afresh from the conversation.
type state struct {
	task            string
	turns           int
	used            map[string]bool
	reads           int
	hits            []hit
	readIDs         map[int64]bool
	docs            []source // documents read
	reports         string   // wait_subagents result
	messages        []source // messages received from siblings
	siblings        []sibling
	siblingsWorking bool
}

var (
	hitRE     = regexp.MustCompile(`(?m)^\[id (\d+)\] (.+) \((\S+)\)$`)
	siblingRE = regexp.MustCompile(`(?m)^- (\S+) \[([^\]]+)\]: (.*)$`)
	messageRE = regexp.MustCompile(`(?m)^From (\S+) \(([^)]*)\): `)
)

func readState(req llm.Request) *state {
	s := &state{used: map[string]bool{}, readIDs: map[int64]bool{}}
	calls := map[string]llm.ToolCall{}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			if s.task == "" {
				s.task = m.Content
			}
		case llm.RoleAssistant:
			s.turns++
			for _, c := range m.ToolCalls {
				calls[c.ID] = c
				s.used[c.Name] = true
			}
		case llm.RoleTool:
			s.readResult(calls[m.ToolCallID], m.Content)
		}
	}
	return s
}

func (s *state) readResult(c llm.ToolCall, content string) {
	if strings.HasPrefix(content, "Error:") {
		return
	}
	switch c.Name {
	case "search":
		for _, m := range hitRE.FindAllStringSubmatchIndex(content, -1) {
			id, _ := strconv.ParseInt(content[m[2]:m[3]], 10, 64)
			end := strings.Index(content[m[1]:], "\n\n")
			snip := content[m[1]:]
			if end >= 0 {
				snip = snip[:end]
			}
			s.hits = append(s.hits, hit{id: id, title: content[m[4]:m[5]], url: content[m[6]:m[7]], snippet: strings.TrimSpace(snip)})
		}
	case "read":
		var args struct {
			ID int64 `json:"id"`
		}
		_ = json.Unmarshal(c.Arguments, &args)
		s.reads++
		s.readIDs[args.ID] = true
		if m := hitRE.FindStringSubmatch(strings.SplitN(content, "\n", 2)[0]); m != nil {
			body := ""
			if parts := strings.SplitN(content, "\n\n", 2); len(parts) == 2 {
				body = parts[1]
			}
			s.docs = append(s.docs, source{title: m[2], url: m[3], text: body})
		}
	case "list_siblings":
		s.siblings = nil
		s.siblingsWorking = false
		for _, m := range siblingRE.FindAllStringSubmatch(content, -1) {
			s.siblings = append(s.siblings, sibling{name: m[1], status: m[2], reason: m[3]})
			if m[2] == "working" {
				s.siblingsWorking = true
			}
		}
	case "wait_subagents":
		s.reports = content
	case "read_messages":
		idx := messageRE.FindAllStringSubmatchIndex(content, -1)
		for i, m := range idx {
			end := len(content)
			if i+1 < len(idx) {
				end = idx[i+1][0]
			}
			name := content[m[2]:m[3]]
			s.messages = append(s.messages, source{title: "message from " + name,
				url: content[m[4]:m[5]], text: strings.TrimSpace(content[m[1]:end])})
		}
	}
}

// unreadHits are the search results not read yet, best first, documents
// before the notes other agents remembered.
func (s *state) unreadHits() []hit {
	var docs, notes []hit
	for _, h := range s.hits {
		switch {
		case s.readIDs[h.id]:
		case strings.HasPrefix(h.url, "note:"):
			notes = append(notes, h)
		default:
			docs = append(docs, h)
		}
	}
	return append(docs, notes...)
}

// finding picks the sibling whose name and reason best match what this
// agent found, and the message to send it; "" when none matches.
func (s *state) finding() (to, text string) {
	var found []source
	found = append(found, s.docs...)
	for _, h := range s.hits {
		found = append(found, source{title: h.title, url: h.url, text: h.snippet})
	}
	best, bestScore := -1, 0.0
	for i, sib := range s.siblings {
		if sib.status != "working" {
			continue
		}
		if sc := overlap(sib.name+" "+sib.reason, found); sc > bestScore {
			best, bestScore = i, sc
		}
	}
	if best < 0 {
		return "", ""
	}
	sib := s.siblings[best]
	sent := bestSentences(sib.name+" "+sib.reason, found, 1)
	if len(sent) == 0 {
		return "", ""
	}
	return sib.name, oneLine("This may help with your part: "+sent[0].text+" (from "+sent[0].src.title+", "+sent[0].src.url+")", 1000)
}
