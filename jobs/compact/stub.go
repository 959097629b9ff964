package compact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/llm"
)

// Names of the tools whose results can be had again by another call.
// Others are never replaced: read_messages takes the messages it shows
// (they cannot be read twice), and the rest act (remember, spawn_subagent,
// send_message...) and answer briefly.
const (
	toolFetch         = "fetch"
	toolRead          = "read"
	toolWebSearch     = "web_search"
	toolSearch        = "search"
	toolReadReport    = "read_report"
	toolWaitSubagents = "wait_subagents"
	toolListSiblings  = "list_siblings"
)

// stubLead opens every stub.
const stubLead = "[Earlier result not shown to save space: "

// maxArgsChars is how much of a call's arguments a stub quotes when they
// are not of a known shape.
const maxArgsChars = 200

// Arguments of the tools whose stubs name them; the field order is the
// order a stub writes them in.
type (
	pageArgs struct {
		URL    string `json:"url"`
		Offset int    `json:"offset"`
	}
	documentArgs struct {
		ID     int64 `json:"id"`
		Offset int   `json:"offset"`
	}
	reportArgs struct {
		Name   string `json:"name"`
		Offset int    `json:"offset"`
	}
	webSearchArgs struct {
		Query      string `json:"query"`
		MaxResults int    `json:"max_results,omitempty"`
	}
	searchArgs struct {
		Query string `json:"query"`
		Limit int    `json:"limit,omitempty"`
	}
	waitArgs struct {
		Names []string `json:"names"`
	}
)

// stubFor is the stub of a result of call that was chars characters long;
// false when the call's result cannot be had again.
func stubFor(call llm.ToolCall, chars int) (string, bool) {
	size := count(chars) + " characters"
	switch call.Name {
	case toolFetch:
		if a, ok := decode[pageArgs](call); ok && strings.TrimSpace(a.URL) != "" {
			a.URL = strings.TrimSpace(a.URL)
			return fmt.Sprintf("%sfetch of %s (%s, offset %d). Call fetch with %s to read it again.]",
				stubLead, a.URL, size, a.Offset, jsonText(a)), true
		}
	case toolRead:
		if a, ok := decode[documentArgs](call); ok {
			return fmt.Sprintf("%sread of document %d (%s, offset %d). Call read with %s to read it again.]",
				stubLead, a.ID, size, a.Offset, jsonText(a)), true
		}
	case toolReadReport:
		if a, ok := decode[reportArgs](call); ok && a.Name != "" {
			return fmt.Sprintf("%sread_report of %s (%s, offset %d). Call read_report with %s to read it again.]",
				stubLead, strconv.Quote(a.Name), size, a.Offset, jsonText(a)), true
		}
	case toolWebSearch:
		if a, ok := decode[webSearchArgs](call); ok && a.Query != "" {
			return fmt.Sprintf("%sweb_search for %s (%s). Call web_search with %s to run it again.]",
				stubLead, strconv.Quote(a.Query), size, jsonText(a)), true
		}
	case toolSearch:
		if a, ok := decode[searchArgs](call); ok && a.Query != "" {
			return fmt.Sprintf("%ssearch for %s (%s). Call search with %s to run it again.]",
				stubLead, strconv.Quote(a.Query), size, jsonText(a)), true
		}
	case toolWaitSubagents:
		if a, ok := decode[waitArgs](call); ok {
			return fmt.Sprintf("%swait_subagents: the reports of %s (%s). %s]",
				stubLead, subagents(a.Names), size, readReportHint(a.Names)), true
		}
	case toolListSiblings:
	default:
		return "", false
	}
	return fmt.Sprintf("%s%s with %s (%s). Call %s with these arguments to run it again.]",
		stubLead, call.Name, argsText(call), size, call.Name), true
}

// subagents names the sub-agents a wait was for, in at most maxArgsChars.
func subagents(names []string) string {
	if len(names) == 0 {
		return "all your sub-agents"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return cut(strings.Join(q, ", "), maxArgsChars)
}

// readReportHint says how to read a sub-agent's report again.
func readReportHint(names []string) string {
	name := "<sub-agent name>"
	if len(names) > 0 {
		name = names[0]
	}
	return "read_report pages through a sub-agent's report: call it with " +
		jsonText(reportArgs{Name: name}) + " and the offset to read from"
}

// decode reads call's arguments as a T; false when they are not one.
func decode[T any](call llm.ToolCall) (T, bool) {
	var v T
	if call.InvalidArguments != "" {
		return v, false
	}
	args := bytes.TrimSpace(call.Arguments)
	if len(args) == 0 {
		args = []byte("{}")
	}
	return v, json.Unmarshal(args, &v) == nil
}

// jsonText is v as compact JSON, without HTML escapes (a URL's & stays &).
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "{}" // the argument structs above always encode
	}
	return strings.TrimSpace(b.String())
}

// argsText is a call's arguments as the model sent them, on one line and
// cut to maxArgsChars.
func argsText(call llm.ToolCall) string {
	text := strings.Join(strings.Fields(call.ArgumentsText()), " ")
	if text == "" {
		text = "{}"
	}
	return cut(text, maxArgsChars)
}

// cut shortens s to at most n characters, marking the cut with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// count writes n with thousands separators: 20,000.
func count(n int) string {
	s := strconv.Itoa(n)
	start := 0
	if n < 0 {
		start = 1
	}
	for i := len(s) - 3; i > start; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
