package jobs

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/kb"
)

// declared is the declaration of one field of a tool's arguments.
func declared(t *testing.T, tool, field string) argField {
	t.Helper()
	for _, f := range argFields(reflect.TypeOf(tools[tool].args)) {
		if f.name == field {
			return f
		}
	}
	t.Fatalf("%s declares no field %s", tool, field)
	return argField{}
}

// The limits the rest of the code (kb, the messenger, the API, the spawn)
// holds to are the ones the tools declare.
func TestToolLimitsAreTheConstants(t *testing.T) {
	cases := []struct {
		tool, field string
		got         func(argField) int
		want        int
	}{
		{toolSearch, "query", maxOf, kb.MaxQueryLen},
		{toolSearch, "limit", maxOf, kb.MaxResults},
		{toolRemember, "title", maxOf, kb.MaxTitleLen},
		{toolRemember, "text", maxOf, kb.MaxNoteLen},
		{toolSpawnSubagent, "name", maxOf, MaxNameLen},
		{toolSpawnSubagent, "reason", maxOf, MaxReasonLen},
		{toolSpawnSubagent, "task", maxOf, MaxTaskLen},
		{toolSpawnSubagent, "max_steps", maxOf, MaxMaxSteps},
		{toolSpawnSubagent, "max_steps", func(f argField) int { return f.def }, DefaultMaxSteps},
		{toolSendMessage, "text", maxOf, MaxMessageLen},
		{toolSendInput, "text", maxOf, MaxMessageLen},
		{toolReadMessages, "wait_seconds", maxOf, MaxWaitSeconds},
		{toolAskOwner, "question", maxOf, MaxQuestionLen},
		{toolProposePlan, "subagents", maxOf, MaxSubagentsPerAgent},
	}
	for _, c := range cases {
		if f := declared(t, c.tool, c.field); c.got(f) != c.want {
			t.Errorf("%s.%s declares %d, the code holds to %d", c.tool, c.field, c.got(f), c.want)
		}
	}
	if d := declared(t, toolSearch, "query").desc; !strings.Contains(d, fmt.Sprintf("%d words", kb.MaxQueryTerms)) {
		t.Errorf("search's query says %q, not kb.MaxQueryTerms (%d)", d, kb.MaxQueryTerms)
	}
}

func maxOf(f argField) int {
	if !f.hasMax {
		return -1
	}
	return f.max
}

// The schema sent to the model is the declaration: names, types, limits,
// defaults, what is required, and no other field.
func TestArgSchema(t *testing.T) {
	got, err := json.Marshal(argSchema(reflect.TypeOf(searchArgs{})))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{` +
		`"limit":{"default":5,"description":"how many documents (default 5)","maximum":10,"minimum":1,"type":"integer"},` +
		`"query":{"description":"keywords, at most 32 words (at most 500 characters)","maxLength":500,"minLength":1,"type":"string"}},` +
		`"required":["query"],"type":"object"}`
	if string(got) != want {
		t.Errorf("search's schema is\n%s\nwant\n%s", got, want)
	}
	var plan map[string]any
	if err := json.Unmarshal(tools[toolProposePlan].spec.Parameters, &plan); err != nil {
		t.Fatal(err)
	}
	subs := plan["properties"].(map[string]any)["subagents"].(map[string]any)
	items := subs["items"].(map[string]any)
	if subs["maxItems"] != 5.0 || items["additionalProperties"] != false ||
		!reflect.DeepEqual(items["required"], []any{"name", "reason", "task"}) {
		t.Errorf("propose_plan's schema: %s", tools[toolProposePlan].spec.Parameters)
	}
	for name, tl := range tools {
		var s map[string]any
		if err := json.Unmarshal(tl.spec.Parameters, &s); err != nil || s["type"] != "object" || s["additionalProperties"] != false {
			t.Errorf("%s: parameters %s (%v)", name, tl.spec.Parameters, err)
		}
	}
}

// spawn_subagent's type takes the registry's names and its model is
// offered only when the operator allows more than one.
func TestSpawnSpecModels(t *testing.T) {
	props := func(a *Service) map[string]any {
		var s map[string]any
		if err := json.Unmarshal(a.liveToolSpec(toolSpawnSubagent).Parameters, &s); err != nil {
			t.Fatal(err)
		}
		return s["properties"].(map[string]any)
	}
	types, err := LoadTypes("")
	if err != nil {
		t.Fatal(err)
	}
	a := &Service{types: types}
	p := props(a)
	if _, ok := p["model"]; ok {
		t.Errorf("one model, yet model is offered: %v", p["model"])
	}
	if enum, _ := p["type"].(map[string]any)["enum"].([]any); !slices.Contains(enum, any(DefaultType)) {
		t.Errorf("type's enum %v lacks %s", enum, DefaultType)
	}
	if p["max_steps"].(map[string]any)["maximum"] != float64(MaxMaxSteps) {
		t.Errorf("max_steps: %v", p["max_steps"])
	}
}

// A decoding error shows the arguments' shape, made from the declaration.
func TestArgShape(t *testing.T) {
	cases := map[string]string{
		toolSearch:        `{"query": "...", "limit": 1..10}`,
		toolRead:          `{"id": 1, "offset": 0, "find": "...", "page": 0..100000}`,
		toolListSiblings:  `{}`,
		toolWaitSubagents: `{"names": ["...", ...]}`,
		toolProposePlan: `{"subagents": [{"name": "...", "reason": "...", "task": "...", "max_steps": 1..40, ` +
			`"type": "...", "model": "..."}, ...]}`,
	}
	for name, want := range cases {
		if got := argShape(reflect.TypeOf(tools[name].args)); got != want {
			t.Errorf("%s: shape %s, want %s", name, got, want)
		}
	}
}

// The declared checks name the field, what it got and what is allowed,
// and fill the defaults.
func TestDeclaredChecks(t *testing.T) {
	cases := []struct{ tool, raw, want string }{
		{toolSearch, `{"query":"q","limit":11}`, "limit must be 1 to 10 (got 11)"},
		{toolSearch, `{"query":"q","limit":-1}`, "limit must be 1 to 10 (got -1)"},
		{toolWebSearch, `{"query":"q","max_results":11}`, "max_results must be 1 to 10 (got 11)"},
		{toolWebSearch, `{"query":"` + strings.Repeat("é", 401) + `"}`, "query is 401 characters; at most 400 are allowed"},
		{toolRead, `{"id":1,"offset":-1}`, "offset must be 0 or more (got -1)"},
		{toolReadReport, `{"name":"a","offset":-2}`, "offset must be 0 or more (got -2)"},
		{toolFetch, `{"url":" "}`, "url must be 1 to 2000 characters"},
		{toolSpawnSubagent, `{"name":"a","reason":"r","task":"t","max_steps":41}`, "max_steps must be 1 to 40 (got 41)"},
		{toolSpawnSubagent, `{"name":"a","reason":" ","task":"t"}`, "reason is required"},
		{toolSpawnSubagent, `{"name":"` + strings.Repeat("a", 41) + `","reason":"r","task":"t"}`, "name must be 1 to 40 letters, digits, - or _"},
		{toolProposePlan, `{"subagents":[]}`, "subagents must list 1 to 5 items (got 0)"},
		{toolSendInput, `{"name":"a","text":" "}`, "text must be 1 to 10000 characters"},
	}
	for _, c := range cases {
		_, err := parseToolArgs(c.tool, []byte(c.raw))
		if !IsToolError(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %.60q: %v, want a tool error containing %q", c.tool, c.raw, err, c.want)
		}
	}
	v, err := parseToolArgs(toolWebSearch, []byte(`{"query":"  tides  "}`))
	if a := v.(*webSearchArgs); err != nil || a.Query != "tides" || a.MaxResults != 5 {
		t.Errorf("web_search: %+v, %v; want the query trimmed and 5 results", a, err)
	}
	v, err = parseToolArgs(toolSpawnSubagent, []byte(`{"name":"a","reason":"r","task":"t"}`))
	if p := v.(*SpawnParams); err != nil || p.MaxSteps != DefaultMaxSteps {
		t.Errorf("spawn_subagent: %+v, %v; want max_steps %d", p, err, DefaultMaxSteps)
	}
}

// readmeRow matches a row of the README's tool table: `name {fields}`,
// who gets it, and its limits.
var readmeRow = regexp.MustCompile("^\\| `([a-z_]+) (\\{[^`]*\\})` \\| [^|]+ \\| (.+) \\|$")

// The README's tool table lists every tool once, with the fields it
// declares (optional ones marked ?), and states every declared bound.
func TestREADMEToolTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := readmeRow.FindStringSubmatch(line); m != nil {
			if rows[m[1]] != nil {
				t.Errorf("README: %s has two rows", m[1])
			}
			rows[m[1]] = m[2:]
		}
	}
	for name := range rows {
		if tools[name] == nil {
			t.Errorf("README: the table lists %s, which is no tool", name)
		}
	}
	for name, tl := range tools {
		row := rows[name]
		if row == nil {
			t.Errorf("README: the table has no row for %s", name)
			continue
		}
		typ := reflect.TypeOf(tl.args)
		if want := signature(typ); row[0] != want {
			t.Errorf("README: %s's arguments are %s, the declaration says %s", name, row[0], want)
		}
		for _, f := range argFields(typ) {
			if bound := readmeBound(typ.Field(f.index).Type, f); bound != "" && !mentions(row[1], bound) {
				t.Errorf("README: %s's limits %q do not state %s's bound %s", name, row[1], f.name, bound)
			}
		}
	}
}

// signature is a tool's fields as the README lists them: {query, limit?}.
func signature(t reflect.Type) string {
	var names []string
	for _, f := range argFields(t) {
		n := f.name
		if f.optional {
			n += "?"
		}
		names = append(names, n)
	}
	return "{" + strings.Join(names, ", ") + "}"
}

// readmeBound is how the README states a field's bound: a text's most
// characters (2,000), a number's or a list's range (1–10); "" when it has
// no upper bound.
func readmeBound(t reflect.Type, f argField) string {
	switch {
	case !f.hasMax:
		return ""
	case t.Kind() == reflect.String:
		return thousands(f.max)
	}
	return thousands(f.min) + "–" + thousands(f.max)
}

// thousands writes n with a comma between thousands, as the README does.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// mentions reports whether text states bound as a number of its own, not
// inside a longer one.
func mentions(text, bound string) bool {
	return regexp.MustCompile(`(^|[^0-9,])` + regexp.QuoteMeta(bound) + `($|[^0-9,]|,[^0-9]|,$)`).MatchString(text)
}
