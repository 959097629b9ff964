package llm_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/llm"
)

func TestNewToolCallKeepsArguments(t *testing.T) {
	cases := []struct {
		sent      string
		arguments string // "" for nil
		invalid   string
	}{
		{`{"query":"tides"}`, `{"query":"tides"}`, ""},
		{"  {\"id\": 3}\n", "  {\"id\": 3}\n", ""},
		{" \n", "{}", ""},
		{"", "{}", ""},
		{`{"query": "tidal ener`, "", `{"query": "tidal ener`},
		{`null`, "", `null`},
		{`["a"]`, "", `["a"]`},
		{"{\"query\":\"\xff\"}", "", "{\"query\":\"\xff\"}"},
	}
	for _, c := range cases {
		call := llm.NewToolCall("c1", "search", c.sent)
		if string(call.Arguments) != c.arguments || call.InvalidArguments != c.invalid {
			t.Errorf("%q: arguments %q, invalid %q; want %q, %q", c.sent, call.Arguments, call.InvalidArguments, c.arguments, c.invalid)
		}
		want := c.invalid
		if want == "" {
			want = c.arguments
		}
		if call.ArgumentsText() != want {
			t.Errorf("%q: ArgumentsText = %q, want %q", c.sent, call.ArgumentsText(), want)
		}
	}
}

// Whatever a model put in Arguments, a message with the call encodes as
// valid UTF-8 JSON, and decodes back to the same arguments text when that
// text was UTF-8.
func TestToolCallAlwaysEncodes(t *testing.T) {
	for _, args := range []string{`{"q":"x"}`, "", "   ", `{"query": "tid`, `"s"`, `{} {}`, "{\"q\":\"\xff\xfe\"}", "\x00", `{"q":"a\u0000b"}`} {
		msg := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "search", Arguments: json.RawMessage(args)}}}
		b, err := json.Marshal(msg)
		if err != nil || !json.Valid(b) || !utf8.Valid(b) {
			t.Errorf("%q: encoded as %s, %v", args, b, err)
			continue
		}
		var back llm.Message
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("%q: %s does not decode: %v", args, b, err)
			continue
		}
		got := back.ToolCalls[0].ArgumentsText()
		want := args
		if strings.TrimSpace(args) == "" {
			want = "{}"
		}
		if utf8.ValidString(args) && got != want {
			t.Errorf("%q: came back as %q", args, got)
		}
	}
}

// A call stored and read back has its arguments byte for byte as the
// model sent them: key order, whitespace and escapes included, and so
// has one read from the former storage (arguments as an object, or null
// with invalid_arguments).
func TestToolCallStoredByteForByte(t *testing.T) {
	for _, args := range []string{
		`{"z":1,"a":{"y":"caf\u00e9 \/ <b>&amp;","b":[1.50, 2e3]}}`,
		" { \"query\" :\t\"tides\" }\n",
		`{"q":"a","q":"b"}`,
		`{"query": "tidal ener`,
		`"just text"`,
	} {
		call := llm.NewToolCall("c1", "search", args)
		b, err := json.Marshal(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}})
		if err != nil {
			t.Fatal(err)
		}
		var back llm.Message
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		got := back.ToolCalls[0]
		if got.ArgumentsText() != args || string(got.Arguments) != string(call.Arguments) ||
			got.InvalidArguments != call.InvalidArguments || got.ID != "c1" || got.Name != "search" {
			t.Errorf("%q came back as %+v", args, got)
		}
	}
	for stored, want := range map[string]string{
		`{"id":"c1","name":"search","arguments":{"query": "tides"}}`:                          `{"query": "tides"}`,
		`{"id":"c1","name":"search","arguments":null,"invalid_arguments":"{\"query\": \"ti"}`: `{"query": "ti`,
		`{"id":"c1","name":"search","arguments":null}`:                                        "{}",
	} {
		var c llm.ToolCall
		if err := json.Unmarshal([]byte(stored), &c); err != nil {
			t.Fatalf("%s: %v", stored, err)
		}
		if c.ArgumentsText() != want {
			t.Errorf("%s: arguments %q, want %q", stored, c.ArgumentsText(), want)
		}
	}
}
