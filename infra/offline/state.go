package offline

import (
	"encoding/json"
	"regexp"
	"sort"
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
	focus           *focus
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
	working         int             // siblings working at the last list_siblings
	messageReads    int             // read_messages calls answered
	searches        int             // search calls answered
	webResults      []webResult     // web_search results, in the provider's order
	pages           []source        // pages fetched
	fetched         map[string]bool // URLs the policy asked fetch for
	more            *readOn         // the rest of the first document read, to read next
	ownerTurns      int             // turns that only asked the owner or proposed a plan
	answer          string          // the owner's answer to ask_owner; "" for none
	planDecided     bool            // propose_plan was answered: decided, expired or refused
	approved        []plannedAgent  // the sub-agents of the approved plan
}

// readOn is where the first document read goes on.
type readOn struct {
	id     int64
	offset int
}

// maxParts bounds the parts of one document the policy reads.
const maxParts = 4

var (
	hitRE     = regexp.MustCompile(`(?m)^\[id (\d+)\] (.+) \((\S+)\)$`)
	siblingRE = regexp.MustCompile(`(?m)^- (\S+) \[([^\]]+)\]: (.*)$`)
	// messageRE starts a message of read_messages: its text follows on
	// the same line (the owner's) or inside an untrusted block (an agent's).
	messageRE = regexp.MustCompile(`(?m)^From (\S+) \(([^)]*)\):[ \n]`)
	// partRE is the line read ends a part of a document with.
	partRE = regexp.MustCompile(`\n\n\[characters (\d+) to (\d+) of (\d+); (?:(\d+) left: call read with "offset": (\d+) to read on|nothing left)\]$`)
)

func readState(req llm.Request) *state {
	s := &state{used: map[string]bool{}, readIDs: map[int64]bool{}, fetched: map[string]bool{}}
	calls := map[string]llm.ToolCall{}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			if s.task == "" {
				s.task = m.Content
			}
		case llm.RoleAssistant:
			s.turns++
			if ownerOnly(m) {
				s.ownerTurns++
			}
			for _, c := range m.ToolCalls {
				calls[c.ID] = c
				s.used[c.Name] = true
			}
		case llm.RoleTool:
			s.readResult(calls[m.ToolCallID], m.Content)
		}
	}
	s.focus = newFocus(steered(s.task, s.answer))
	return s
}

func (s *state) readResult(c llm.ToolCall, content string) {
	if c.Name == "fetch" {
		var args struct {
			URL string `json:"url"`
		}
		_ = json.Unmarshal(c.Arguments, &args)
		s.fetched[args.URL] = true
		if page, ok := parsePage(content, args.URL); ok {
			s.pages = append(s.pages, page)
		}
		return
	}
	if c.Name == "read_messages" {
		s.messageReads++ // an error too: it is not read again
	}
	if c.Name == toolAskOwner || c.Name == toolProposePlan {
		s.readOwnerResult(c.Name, content)
		return
	}
	if strings.HasPrefix(content, "Error:") {
		return
	}
	switch c.Name {
	case "web_search":
		s.webResults = append(s.webResults, parseWebResults(content)...)
	case "search":
		s.searches++
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
		s.readPart(c, content)
	case "list_siblings":
		s.siblings = nil
		s.siblingsWorking = false
		s.working = 0
		for _, m := range siblingRE.FindAllStringSubmatch(content, -1) {
			s.siblings = append(s.siblings, sibling{name: m[1], status: m[2], reason: m[3]})
			if m[2] == "working" {
				s.siblingsWorking = true
				s.working++
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
			text := strings.TrimSpace(content[m[1]:end])
			if _, body, ok := untrustedBody(text); ok {
				text = strings.TrimSpace(body)
			}
			s.messages = append(s.messages, messageSource(content[m[2]:m[3]], content[m[4]:m[5]], text))
		}
	}
}

// toRead are the search results worth reading, best first: the unread
// documents whose titles match the question best, then the others if none
// matches, and the notes other agents remembered last. A second document
// is worth reading only when it matches the question as well as the first
// did, or when none matches by its title at all.
func (s *state) toRead() []hit {
	var docs, notes []hit
	best := 0.0
	for _, h := range s.hits {
		if !strings.HasPrefix(h.url, "note:") {
			best = max(best, s.focus.titleScore(h.title))
		}
	}
	for _, h := range s.hits {
		switch {
		case s.readIDs[h.id]:
		case strings.HasPrefix(h.url, "note:"):
			notes = append(notes, h)
		case s.focus.titleScore(h.title) >= min(best, 5):
			docs = append(docs, h)
		}
	}
	sort.SliceStable(docs, func(i, j int) bool {
		return s.focus.titleScore(docs[i].title) > s.focus.titleScore(docs[j].title)
	})
	if best > 0 {
		return docs
	}
	return append(docs, notes...)
}

// finding picks the sibling whose name and reason best match what this
// agent found, and the message to send it; "" when none matches.
func (s *state) finding() (to, text string) {
	found := s.sources()
	best, bestScore := -1, 0.0
	for i, sib := range s.siblings {
		if sib.status != "working" {
			continue
		}
		if sc := overlap(partOf(sib.reason), found); sc > bestScore {
			best, bestScore = i, sc
		}
	}
	if best < 0 {
		return "", ""
	}
	sib := s.siblings[best]
	sent := bestSentences(newFocus(partOf(sib.reason)), found, 1)
	if len(sent) == 0 {
		return "", ""
	}
	return sib.name, oneLine(helpPrefix+sent[0].text+" (from "+sent[0].src.title+", "+sent[0].src.url+")", 1000)
}

// sources are the texts the report may quote from what the agent read
// itself: the documents it read, or the snippets of its search results
// when it could read none.
func (s *state) sources() []source {
	if len(s.docs) > 0 {
		return append([]source{}, s.docs...)
	}
	var out []source
	for _, h := range s.hits {
		out = append(out, source{title: h.title, url: h.url, text: h.snippet})
	}
	return out
}

// helpPrefix starts the messages this policy sends a sibling.
const helpPrefix = "This may help with your part: "

var fromRE = regexp.MustCompile(`^(?s)(.*) \(from (.+), (\S+)\)$`)

// messageSource is a message received from a sibling as a source: when
// it quotes a document, as this policy's messages do, the document it
// quotes, so the report cites the document and not the messenger.
func messageSource(from, run, text string) source {
	if m := fromRE.FindStringSubmatch(strings.TrimPrefix(text, helpPrefix)); m != nil && strings.Contains(m[3], ":") {
		return source{title: m[2], url: m[3], text: m[1]}
	}
	return source{title: "message from " + from, url: run, text: text}
}

// partOf is the part of the question a sibling's reason names: the text
// after its last ": ", or the whole reason.
func partOf(reason string) string {
	if i := strings.LastIndex(reason, ": "); i >= 0 {
		return reason[i+2:]
	}
	return reason
}

// readPart takes in one part of a document that read returned: the first
// part of a document is a new document read; a later part (offset) adds to
// it. The first document read is read on, part by part, up to maxParts.
func (s *state) readPart(c llm.ToolCall, content string) {
	var args struct {
		ID     int64 `json:"id"`
		Offset int   `json:"offset"`
	}
	_ = json.Unmarshal(c.Arguments, &args)
	m := hitRE.FindStringSubmatch(strings.SplitN(content, "\n", 2)[0])
	if m == nil {
		return
	}
	body := ""
	if parts := strings.SplitN(content, "\n\n", 2); len(parts) == 2 {
		body = parts[1]
	}
	next := 0
	if pm := partRE.FindStringSubmatch(body); pm != nil {
		body = body[:len(body)-len(pm[0])]
		next, _ = strconv.Atoi(pm[5])
	}
	if _, inner, ok := untrustedBody(body); ok {
		body = inner // a note another agent remembered
	}
	s.more = nil
	if args.Offset > 0 {
		for i := range s.docs {
			if s.docs[i].url == m[3] && s.docs[i].parts > 0 {
				s.docs[i].text += body
				if s.docs[i].parts++; next > 0 && s.docs[i].parts < maxParts {
					s.more = &readOn{id: args.ID, offset: next}
				}
				return
			}
		}
		return
	}
	s.reads++
	s.readIDs[args.ID] = true
	s.docs = append(s.docs, source{title: m[2], url: m[3], text: body, parts: 1})
	if s.reads == 1 && next > 0 {
		s.more = &readOn{id: args.ID, offset: next}
	}
}
