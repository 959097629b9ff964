package compact

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/llm"
)

// A request without a window, or under the high-water mark, is sent as it
// is, in a slice of its own.
func TestUnchangedUnderTheMark(t *testing.T) {
	req := request(research(6), 4096)
	for _, cfg := range []Config{{}, {Window: 128000}} {
		res := Fit(req, cfg, 0)
		checkFit(t, req, cfg, 0, res)
		if !reflect.DeepEqual(res.Request, req) || res.Stubbed != 0 || !res.Fits {
			t.Errorf("window %d: request changed (%d stubs, fits %v)", cfg.Window, res.Stubbed, res.Fits)
		}
		if &res.Request.Messages[0] == &req.Messages[0] {
			t.Errorf("window %d: the request shares the input's messages", cfg.Window)
		}
	}
}

// The same request gives the same result, and the input is not modified.
func TestDeterministicAndInputKept(t *testing.T) {
	req := request(research(30), 4096)
	before := clone(req.Messages)
	cfg := Config{Window: 128000}
	for level := range 3 {
		a, b := Fit(req, cfg, level), Fit(req, cfg, level)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("level %d: two fits of one request differ", level)
		}
		if a.Stubbed == 0 {
			t.Errorf("level %d: nothing stubbed in a 30-step research", level)
		}
		checkFit(t, req, cfg, level, a)
	}
	if !reflect.DeepEqual(req.Messages, before) {
		t.Fatal("Fit modified its input")
	}
}

// Each tool's stub says what was there and the call that gets it back;
// short results and results that cannot be had again are kept whole.
func TestStubs(t *testing.T) {
	long := strings.Repeat("x", 2000)
	cases := []struct {
		name, args string
		result     string
		want       []string // in the stub; none: kept whole
	}{
		{toolFetch, `{"url":"https://example.com/a?x=1&y=2","offset":20000}`, long, []string{
			"fetch of https://example.com/a?x=1&y=2 (2,000 characters, offset 20000)",
			`Call fetch with {"url":"https://example.com/a?x=1&y=2","offset":20000} to read it again.]`}},
		{toolFetch, `{"url":"https://example.com/b"}`, long, []string{`{"url":"https://example.com/b","offset":0}`}},
		{toolRead, `{"id":42,"offset":12000}`, long, []string{"read of document 42 (2,000 characters, offset 12000)",
			`Call read with {"id":42,"offset":12000}`}},
		{toolWebSearch, `{"query":"tidal lagoon cost","max_results":5}`, long, []string{`web_search for "tidal lagoon cost"`,
			`Call web_search with {"query":"tidal lagoon cost","max_results":5} to run it again.]`}},
		{toolSearch, `{"query":"barrage"}`, long, []string{`search for "barrage"`, `Call search with {"query":"barrage"}`}},
		{toolReadReport, `{"name":"costs","offset":4000}`, long, []string{`read_report of "costs"`,
			`Call read_report with {"name":"costs","offset":4000}`}},
		{toolWaitSubagents, `{"names":["costs","sites"]}`, long, []string{`the reports of "costs", "sites"`,
			`read_report pages through a sub-agent's report: call it with {"name":"costs","offset":0}`}},
		{toolWaitSubagents, `{}`, long, []string{"the reports of all your sub-agents", `{"name":"<sub-agent name>","offset":0}`}},
		{toolListSiblings, `{}`, long, []string{"list_siblings with {}", "Call list_siblings"}},
		{toolFetch, `{"url":"https://example.com/c"}`, "Error: could not fetch https://example.com/c: 404 Not Found", nil},
		{toolFetch, `{"url":"https://example.com/d"}`, strings.Repeat("y", DefaultMinStubChars-1), nil},
		{"read_messages", `{}`, long, nil},
		{"remember", `{"title":"t","text":"x"}`, long, nil},
		{"spawn_subagent", `{"name":"costs","task":"x"}`, long, nil},
		{"send_message", `{"to":"costs","text":"x"}`, long, nil},
	}
	for _, c := range cases {
		t.Run(c.name+c.args, func(t *testing.T) {
			var conv conversation
			conv.user("topic")
			conv.step("first", call{c.name, c.args, c.result})
			for i := range 4 {
				conv.step("next", fetchCall(fmt.Sprintf("https://example.com/next/%d", i), 0))
			}
			req := request(conv.msgs, 0)
			cfg := Config{Window: 14000}
			res := Fit(req, cfg, 0)
			checkFit(t, req, cfg, 0, res)
			got := res.Request.Messages[2].Content
			if c.want == nil {
				if got != c.result {
					t.Fatalf("replaced by %q", got)
				}
				return
			}
			if !isStub(got) || strings.Contains(got, "\n") {
				t.Fatalf("not a one-line stub: %q", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("stub %q does not say %q", got, w)
				}
			}
		})
	}
}

// A request that the provider found too long (level 1) keeps only the
// newest result whole; from level 2 on, when that is still too much, the
// newest is cut to its head, with the call that reads on.
func TestLevels(t *testing.T) {
	var conv conversation
	conv.user("topic")
	for i := range 6 {
		conv.step(fmt.Sprintf("step %d", i), fetchCall(fmt.Sprintf("https://example.com/p/%d", i), 0))
	}
	req := request(conv.msgs, 0)
	cases := []struct {
		window, level int
		whole, cut    int // fetch results kept whole and cut to their head
	}{
		{17800, 0, 2, 0},
		{17800, 1, 1, 0},
		{17800, 2, 1, 0},
		{12000, 0, 1, 0}, // the two newest do not fit: only one is kept
		{12000, 1, 1, 0},
		{12000, 2, 0, 1},
		{8000, 0, 0, 1}, // beside the passages the stubs keep, not even the newest fits whole
		{8000, 1, 0, 1},
		{8000, 2, 0, 1},
		{8000, 3, 0, 1},
	}
	for _, c := range cases {
		cfg := Config{Window: c.window}
		res := Fit(req, cfg, c.level)
		checkFit(t, req, cfg, c.level, res)
		whole := 0
		for i, m := range res.Request.Messages {
			if m.Role == llm.RoleTool && m.Content == req.Messages[i].Content {
				whole++
			}
		}
		if !res.Fits || whole != c.whole || res.Trimmed != c.cut || res.Stubbed != 6-c.whole-c.cut {
			t.Errorf("window %d level %d: fits %v, %d whole, %d cut, %d stubbed; want %d whole, %d cut",
				c.window, c.level, res.Fits, whole, res.Trimmed, res.Stubbed, c.whole, c.cut)
		}
		if c.cut > 0 {
			checkCutPage(t, res.Request.Messages[len(req.Messages)-1].Content, "https://example.com/p/5")
		}
	}
}

// checkCutPage checks a fetch result of url cut to its head: it still ends
// its untrusted block, and its note's offset is the page's next character.
func checkCutPage(t *testing.T, content, url string) {
	t.Helper()
	m := regexp.MustCompile(`\n\[Cut to save space: ([0-9,]+) of this result's ([0-9,]+) characters are not shown\. ` +
		`Call fetch with \{"url":"([^"]+)","offset":(\d+)\} to read on\.\]\n<<<END UNTRUSTED WEB CONTENT>>>$`).FindStringSubmatch(content)
	if m == nil {
		t.Fatalf("cut result does not end with its note and closing line: ...%q", content[max(0, len(content)-300):])
	}
	offset, _ := strconv.Atoi(m[4])
	text := page(url)
	head := content[:len(content)-len(m[0])]
	if m[3] != url || offset < 40 || offset > fetchChars || !strings.HasSuffix(head, text[offset-40:offset]) {
		t.Errorf("note reads on at %s offset %d, but the head ends with %q", m[3], offset, head[len(head)-40:])
	}
	full := fetchResult(url, 0)
	if hidden, total := strings.ReplaceAll(m[1], ",", ""), strings.ReplaceAll(m[2], ",", ""); hidden != strconv.Itoa(len(full)-len(head)) || total != strconv.Itoa(len(full)) {
		t.Errorf("note says %s of %s characters hidden; the result had %d, %d shown", m[1], m[2], len(full), len(head))
	}
}

// Where a cut result of each paged tool reads on.
func TestReadOn(t *testing.T) {
	body := strings.Repeat("0123456789", 100)
	cases := []struct {
		name, args, content string
		shown               int // bytes of content shown
		want                string
	}{
		{toolFetch, `{"url":"https://e.com/x","offset":20000}`,
			"<<<UNTRUSTED WEB CONTENT: page x>>>\nTitle: T\nURL: https://e.com/x\n[characters 20000 to 21000 of 21000; nothing left]\n" + body,
			len("<<<UNTRUSTED WEB CONTENT: page x>>>\nTitle: T\nURL: https://e.com/x\n[characters 20000 to 21000 of 21000; nothing left]\n") + 250,
			`{"url":"https://e.com/x","offset":20250}`},
		{toolFetch, `{"url":"https://e.com/x"}`, "<<<UNTRUSTED>>>\nTitle: T\nURL: u\n[characters 0 to 1000 of 1000; nothing left]\n" + body, 10,
			`{"url":"https://e.com/x","offset":0}`},
		{toolRead, `{"id":7}`, "[id 7] A title (kb)\n\n" + body, len("[id 7] A title (kb)\n\n") + 120, `{"id":7,"offset":120}`},
		{toolReadReport, `{"name":"costs","offset":4000}`, "## costs (run 9): report\n[characters 4000 to 5000 of 5000; nothing left]\n" + body,
			len("## costs (run 9): report\n[characters 4000 to 5000 of 5000; nothing left]\n") + 999, `{"name":"costs","offset":4999}`},
	}
	for _, c := range cases {
		got, ok := readOn(llm.NewToolCall("c1", c.name, c.args), c.content, c.shown)
		if !ok || got != c.want {
			t.Errorf("%s %s: reads on with %q, %v; want %q", c.name, c.args, got, ok, c.want)
		}
	}
	for _, c := range []struct{ name, args, content string }{
		{toolSearch, `{"query":"q"}`, body},
		{toolFetch, `{"url":"https://e.com/x"}`, body}, // no header: where its page text starts is unknown
	} {
		if got, ok := readOn(llm.NewToolCall("c1", c.name, c.args), c.content, 100); ok {
			t.Errorf("%s: reads on with %q", c.name, got)
		}
	}
}

// When what is never replaced is too large on its own, Fits is false, and
// every replaceable result is stubbed or cut while the newest assistant
// message stays.
func TestDoesNotFit(t *testing.T) {
	var conv conversation
	conv.user("topic")
	for i := range 4 {
		conv.step(fmt.Sprintf("step %d", i), fetchCall(fmt.Sprintf("https://example.com/p/%d", i), 0))
	}
	bigSystem := request(conv.msgs, 1000)
	bigSystem.System = strings.Repeat("rules ", 10000)
	conv.step(strings.Repeat("My long thoughts. ", 3000))
	bigReply := request(conv.msgs, 1000)
	for name, req := range map[string]llm.Request{"system prompt": bigSystem, "assistant message": bigReply} {
		cfg := Config{Window: 12000}
		for level := range 4 {
			res := Fit(req, cfg, level)
			checkFit(t, req, cfg, level, res)
			if res.Fits || res.Stubbed+res.Trimmed != 4 {
				t.Errorf("%s, level %d: fits %v with %d stubs, %d cut (prompt %d, budget %d)", name, level, res.Fits, res.Stubbed, res.Trimmed,
					res.Prompt, cfg.Budget(req.MaxCompletionTokens, level))
			}
		}
	}
	cfg := Config{Window: 1000}
	if res := Fit(request(nil, 2000), cfg, 0); res.Fits {
		t.Errorf("a completion cap larger than the window fits (budget %d)", cfg.Budget(2000, 0))
	}
}

// Config's defaults, and its budget per level.
func TestBudget(t *testing.T) {
	cfg := Config{Window: 128000}
	cases := []struct{ level, cap, want int }{
		{0, 4096, 111104}, // 128,000·0.9 − 4,096
		{1, 4096, 83328},
		{2, 0, 64800}, // 115,200·0.5625
		{-1, 0, 115200},
	}
	for _, c := range cases {
		if got := cfg.Budget(c.cap, c.level); got != c.want {
			t.Errorf("level %d, cap %d: budget %d, want %d", c.level, c.cap, got, c.want)
		}
	}
	d := Config{LowWater: 0.9, HighWater: 0.6}.withDefaults()
	if d.Margin != DefaultMargin || d.KeepNewest != DefaultKeepNewest || d.MinStubChars != DefaultMinStubChars || d.LowWater != 0.6 {
		t.Errorf("defaults: %+v", d)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 1234567: "1,234,567", -1200: "-1,200"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}
