package openaifake

import (
	"fmt"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"
)

// Fault is a way the server misbehaves on one answer, as real providers
// sometimes do.
type Fault int

// The faults. Those up to CutArguments are answers (HTTP 200, billed);
// the others are not answers and are not billed.
const (
	NoFault Fault = iota
	// EmptyChoices is a 200 with "choices": [] and the usage billed.
	EmptyChoices
	// EmptyMessage is a message with no content and no tool calls,
	// finish_reason "stop".
	EmptyMessage
	// Refusal is a message with message.refusal set and null content.
	Refusal
	// NoToolCallID is tool calls with no "id".
	NoToolCallID
	// NULInContent is a NUL (U+0000) in the content.
	NULInContent
	// NULInToolName is a NUL in the first tool call's name.
	NULInToolName
	// InvalidUTF8 is raw bytes that are not UTF-8 in the content and in
	// the first tool call's name.
	InvalidUTF8
	// ContentWithToolCalls is text content next to tool calls.
	ContentWithToolCalls
	// CutArguments is the last tool call's arguments cut mid-JSON, with
	// finish_reason "length".
	CutArguments
	// ServerError is a 500 with OpenAI's server_error body.
	ServerError
	// Overloaded is a 503 with OpenAI's server_error body.
	Overloaded
	// Timeout holds the request without an answer until the client goes
	// away or Config.HangFor passes, then drops the connection.
	Timeout
	// Garbage is a 200 whose body is not JSON.
	Garbage
)

var faultNames = [...]string{"none", "empty_choices", "empty_message", "refusal", "no_tool_call_id",
	"nul_in_content", "nul_in_tool_name", "invalid_utf8", "content_with_tool_calls", "cut_arguments",
	"server_error", "overloaded", "timeout", "garbage"}

// String is the fault's name, as Event and Call print it.
func (f Fault) String() string {
	if f >= 0 && int(f) < len(faultNames) {
		return faultNames[f]
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// Billed reports whether an answer with this fault is billed.
func (f Fault) Billed() bool { return f <= CutArguments }

// faultQueue holds the faults queued by Server.Inject, in order.
type faultQueue struct {
	mu    sync.Mutex
	queue []queuedFault
}

type queuedFault struct {
	fault Fault
	n     int
}

// Inject makes the next n answered requests (those that pass the checks
// and the rate limits) misbehave with f, after the faults queued before.
func (s *Server) Inject(f Fault, n int) {
	if n <= 0 || f == NoFault {
		return
	}
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.queue = append(s.faults.queue, queuedFault{f, n})
}

// next takes the fault of the next answered request; NoFault when none
// is queued.
func (q *faultQueue) next() Fault {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) == 0 {
		return NoFault
	}
	f := q.queue[0].fault
	if q.queue[0].n--; q.queue[0].n == 0 {
		q.queue = q.queue[1:]
	}
	return f
}

// Texts the faults put in answers.
const (
	refusalText     = "I'm sorry, but I can't help with that."
	withCallsText   = "Let me look that up."
	faultArguments  = `{"query": "openaifake"}`
	invalidUTF8Mark = "@@openaifake-invalid-utf8@@"
)

// invalidUTF8 is what the InvalidUTF8 fault adds: bytes that are not
// UTF-8 (a lone continuation byte, 0xff, a truncated two-byte sequence).
// encoding/json would replace them, so they go through the encoder as
// invalidUTF8Mark and are put back in the body.
const invalidUTF8 = "\x80\xff\xc3"

// applyFault makes c misbehave with f.
func (s *Server) applyFault(c *completion, f Fault, req *Request) {
	switch f {
	case EmptyChoices:
		c.emptyChoices = true
		return
	case EmptyMessage:
		empty := ""
		c.content, c.refusal, c.toolCalls, c.finish = &empty, nil, nil, finishStop
	case Refusal:
		text := refusalText
		c.content, c.refusal, c.toolCalls, c.finish = nil, &text, nil, finishStop
	case NoToolCallID:
		s.ensureCall(c, req)
		c.noCallIDs = true
	case NULInContent:
		text := deref(c.content) + "\x00"
		c.content = &text
	case NULInToolName:
		s.ensureCall(c, req)
		c.toolCalls[0].Name += "\x00"
	case InvalidUTF8:
		s.ensureCall(c, req)
		text := deref(c.content) + invalidUTF8
		c.content, c.invalidUTF8 = &text, true
		c.toolCalls[0].Name += invalidUTF8
	case ContentWithToolCalls:
		s.ensureCall(c, req)
		if deref(c.content) == "" {
			text := withCallsText
			c.content = &text
		}
	case CutArguments:
		s.ensureCall(c, req)
		last := &c.toolCalls[len(c.toolCalls)-1]
		last.Arguments = cutMidway(last.Arguments)
		c.finish = finishLength
	default:
		return
	}
	c.recount()
}

// ensureCall gives c a tool call when it has none: of the request's first
// tool, or of "tool" when it has none.
func (s *Server) ensureCall(c *completion, req *Request) {
	if len(c.toolCalls) > 0 {
		return
	}
	name := "tool"
	if len(req.Tools) > 0 {
		name = req.Tools[0].Name
	}
	c.toolCalls = []ToolCall{{ID: s.nextCallID(), Name: name, Arguments: faultArguments}}
	c.finish = finishToolCalls
}

// cutMidway is the first half of JSON arguments (never all of them).
func cutMidway(args string) string {
	if len(args) < 4 {
		args = faultArguments
	}
	n := len(args) / 2
	for n > 0 && !utf8.RuneStart(args[n]) {
		n--
	}
	return args[:n]
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// garbageBody is what a proxy in front of the API writes when it fails.
const garbageBody = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n" +
	"<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n"

// writeGarbage answers 200 with a body that is not JSON.
func (s *Server) writeGarbage(w http.ResponseWriter, h http.Header, now time.Time, model string) {
	s.rec.event(Event{Time: now, Status: http.StatusOK, Kind: KindGarbage, Model: model, Fault: Garbage})
	copyHeader(w.Header(), h)
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(garbageBody))
}

// hang holds a request without answering until the client goes away, the
// server closes or Config.HangFor passes, then drops the connection.
func (s *Server) hang(r *http.Request, now time.Time, model string) {
	s.rec.event(Event{Time: now, Kind: KindTimeout, Model: model, Fault: Timeout})
	var expired <-chan time.Time
	if s.cfg.HangFor > 0 {
		t := time.NewTimer(s.cfg.HangFor)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-r.Context().Done():
	case <-s.srv.Done():
	case <-expired:
	}
	panic(http.ErrAbortHandler) // no response at all
}
