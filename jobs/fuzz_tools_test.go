package jobs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// checker is an argument struct with checks of its own after decoding.
type checker interface{ check() error }

// parseToolArgs is what a tool does with its arguments before it touches
// the database: the shared decoding into the struct its registry entry
// declares, then the struct's own checks.
func parseToolArgs(name string, raw []byte) (any, error) {
	v := reflect.New(reflect.TypeOf(tools[name].args)).Interface()
	if err := decodeArgs(raw, v); err != nil {
		return v, err
	}
	if c, ok := v.(checker); ok {
		return v, c.check()
	}
	return v, nil
}

// FuzzToolArgs feeds arbitrary bytes to every tool's argument decoding and
// checks: none panics, every refusal is a toolError whose text can be
// stored, and accepted arguments hold only text Postgres can store, within
// the limits. Seeds are in testdata/fuzz/FuzzToolArgs.
//
//	go test -run XXX -fuzz FuzzToolArgs -fuzztime 20s ./jobs/
func FuzzToolArgs(f *testing.F) {
	for name, tl := range tools {
		if tl.args == nil {
			f.Fatalf("tool %s declares no arguments", name)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for name := range tools {
			v, err := parseToolArgs(name, raw)
			if err != nil {
				if !IsToolError(err) {
					t.Fatalf("%s: %q: error %v (%T) is not a toolError", name, raw, err, err)
				}
				if msg := err.Error(); msg == "" || encodingProblem(msg) != "" {
					t.Fatalf("%s: %q: the error %q cannot be stored as the tool's result", name, raw, msg)
				}
				continue
			}
			if err := checkStrings(reflect.ValueOf(v), "arguments"); err != nil {
				t.Fatalf("%s: %q: accepted arguments %+v hold text Postgres cannot store: %v", name, raw, v, err)
			}
			if msg := overLimit(v); msg != "" {
				t.Fatalf("%s: %q: accepted arguments %+v: %s", name, raw, v, msg)
			}
			if err := checkFields(v); err != nil {
				t.Fatalf("%s: %q: accepted arguments %+v break their declaration: %v", name, raw, v, err)
			}
		}
	})
}

// overLimit says which limit accepted arguments break, or "".
func overLimit(v any) string {
	runes := utf8.RuneCountInString
	switch a := v.(type) {
	case *searchArgs:
		if n := runes(a.Query); n == 0 || n > kb.MaxQueryLen || a.Limit < 1 || a.Limit > kb.MaxResults {
			return "query or limit out of range"
		}
	case *rememberArgs:
		if runes(a.Title) > kb.MaxTitleLen || runes(a.Text) > kb.MaxNoteLen || a.Title == "" || a.Text == "" {
			return "title or text out of range"
		}
	case *SpawnParams:
		if runes(a.Reason) > MaxReasonLen || runes(a.Task) > MaxTaskLen || !nameRE.MatchString(a.Name) ||
			a.MaxSteps < 1 || a.MaxSteps > MaxMaxSteps {
			return "spawn input out of range"
		}
	case *sendMessageArgs:
		if n := runes(a.Text); n == 0 || n > MaxMessageLen {
			return "text out of range"
		}
	case *readMessagesArgs:
		if a.WaitSeconds < 0 || a.WaitSeconds > MaxWaitSeconds {
			return "wait out of range"
		}
	case *askOwnerArgs:
		if n := runes(a.Question); n == 0 || n > MaxQuestionLen {
			return "question out of range"
		}
	case *webSearchArgs:
		if n := runes(a.Query); n == 0 || n > 400 || a.MaxResults < 1 || a.MaxResults > 10 {
			return "query or max_results out of range"
		}
	}
	return ""
}

func TestDecodeArgs(t *testing.T) {
	cases := []struct {
		tool, raw, want string // want "" means accepted
	}{
		{toolSearch, `{"query":"tides"}`, ""},
		{toolSearch, `{"query": "tidal ener`, `invalid arguments (not valid JSON: unexpected end of JSON input); expected {"query": "...", "limit": 1..10}`},
		{toolSearch, `{"query":"a"} {"query":"b"}`, "invalid arguments (not valid JSON: invalid character '{' after top-level value)"},
		{toolSearch, `["tides"]`, "invalid arguments (not a JSON object)"},
		{toolSearch, `null`, "invalid arguments (not a JSON object)"},
		{toolSearch, `{"q":"tides"}`, `unknown field "q"`},
		{toolSearch, `{"query":"tides","limit":"3"}`, "cannot unmarshal string"},
		{toolSearch, "{\"query\":\"ti\xffdes\"}", "invalid arguments (text must be valid UTF-8; the byte at offset 12 is not)"},
		{toolSearch, `{"query":"ti\u0000des"}`, "query must not contain NUL characters"},
		{toolSearch, `{"query":"` + strings.Repeat("é", kb.MaxQueryLen) + `"}`, ""},
		{toolSearch, `{"query":"` + strings.Repeat("é", kb.MaxQueryLen+1) + `"}`, "query is 501 characters; at most 500 are allowed"},
		{toolSearch, `{"query":"` + strings.Repeat("w ", kb.MaxQueryTerms+1) + `"}`, "query has 33 words; at most 32 are allowed"},
		{toolSearch, `{"query":"\ud800"}`, ""}, // a lone surrogate decodes to U+FFFD, which Postgres stores
		{toolListSiblings, ``, ""},
		{toolListSiblings, ` {} `, ""},
		{toolRemember, `{"title":"` + strings.Repeat("é", kb.MaxTitleLen) + `","text":"t"}`, ""},
		{toolRemember, `{"title":"` + strings.Repeat("é", kb.MaxTitleLen+1) + `","text":"t"}`, "title is 201 characters; at most 200"},
		{toolRemember, `{"title":"t","text":"a\u0000"}`, "text must not contain NUL characters"},
		{toolRemember, `{"title":" ","text":"t"}`, "title must be 1 to 200 characters"},
		{toolSpawnSubagent, `{"name":"a","reason":"` + strings.Repeat("é", MaxReasonLen) + `","task":"t"}`, ""},
		{toolSpawnSubagent, `{"name":"a","reason":"` + strings.Repeat("é", MaxReasonLen+1) + `","task":"t"}`, "reason is 301 characters; at most 300"},
		{toolSpawnSubagent, `{"name":"a","reason":"r","task":"` + strings.Repeat("é", MaxTaskLen+1) + `"}`, "task is 2001 characters; at most 2000"},
		{toolSpawnSubagent, `{"name":"a\u0000","reason":"r","task":"t"}`, "name must not contain NUL characters"},
		{toolSendMessage, `{"to":"b","text":"` + strings.Repeat("é", MaxMessageLen) + `"}`, ""},
		{toolSendMessage, `{"to":"b\u0000","text":"hi"}`, "to must not contain NUL characters"},
		{toolWaitSubagents, `{"names":["a","b\u0000"]}`, "names must not contain NUL characters"},
		{toolReadMessages, `{"wait_seconds":61}`, "wait_seconds must be 0 to 60"},
		{toolAskOwner, `{"question":"` + strings.Repeat("é", MaxQuestionLen) + `"}`, ""},
		{toolAskOwner, `{"question":"` + strings.Repeat("é", MaxQuestionLen+1) + `"}`, "question is 2001 characters; at most 2000"},
		{toolAskOwner, `{"question":"  "}`, "question must be 1 to 2000 characters"},
		{toolAskOwner, `{}`, "question must be 1 to 2000 characters"},
	}
	for _, c := range cases {
		_, err := parseToolArgs(c.tool, []byte(c.raw))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %.60q: %v, want it accepted", c.tool, c.raw, err)
		case c.want != "" && (!IsToolError(err) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %.60q: %v, want a tool error containing %q", c.tool, c.raw, err, c.want)
		}
	}
}

// The wait before a step's transaction decodes read_messages' arguments as
// the tool does: a call the tool refuses waits for nothing.
func TestMessageWait(t *testing.T) {
	call := func(name, args string) llm.ToolCall { return llm.NewToolCall("c", name, args) }
	cases := []struct {
		calls []llm.ToolCall
		want  time.Duration
	}{
		{[]llm.ToolCall{call(toolReadMessages, `{"wait_seconds":5}`)}, 5 * time.Second},
		{[]llm.ToolCall{call(toolReadMessages, `{"wait_seconds":5,"extra":1}`)}, 0},
		{[]llm.ToolCall{call(toolReadMessages, `{"wait_seconds":5}{}`)}, 0},
		{[]llm.ToolCall{call(toolReadMessages, `{"wait_seconds":61}`)}, 0},
		{[]llm.ToolCall{call(toolReadMessages, `{"wait_seconds":-1}`)}, 0},
		{[]llm.ToolCall{call(toolReadMessages, `{"wait_seconds":5`)}, 0},
		{[]llm.ToolCall{call(toolSearch, `{"wait_seconds":5}`)}, 0},
		{[]llm.ToolCall{call(toolReadMessages, `{"wait_seconds":"x"}`), call(toolReadMessages, `{"wait_seconds":3}`),
			call(toolReadMessages, `{"wait_seconds":7}`), call(toolReadMessages, `{}`)}, 7 * time.Second},
	}
	for _, c := range cases {
		if got := messageWait(c.calls); got != c.want {
			t.Errorf("%s: wait %v, want %v", c.calls[0].ArgumentsText(), got, c.want)
		}
	}
}

// The tools' results are stored in the step's jsonb and a tool error is
// text: its JSON must hold no NUL and be UTF-8 for any input.
func TestToolErrorOfBadInputIsStorable(t *testing.T) {
	for _, raw := range []string{`{"name":"\u0000\u0001"}`, "{\"name\":\"\xff\"}", `{"name":"` + strings.Repeat("é", 50) + `"}`} {
		_, err := parseToolArgs(toolSpawnSubagent, []byte(raw))
		b, _ := json.Marshal(err.Error())
		if !IsToolError(err) || strings.Contains(string(b), `\u0000`) || !utf8.Valid(b) {
			t.Errorf("%q: %v", raw, err)
		}
	}
}
