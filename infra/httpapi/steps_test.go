package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// These tests read GET /v1/gb/research/{id}/steps over steps written to
// the database as a step's commit writes them; no worker runs.

// longResult is a tool result of 5,000 characters, each two bytes long.
var longResult = strings.Repeat("é", 5000)

// stepTree starts a research of alice's, gives it a sub-agent "kid", and
// records five steps, committed in this order: root 1, kid 1, root 2,
// kid 2, root 3. Step 2 of the root read a page of longResult. It returns
// the ids of the root and of the kid.
func (b *testBundle) stepTree(t *testing.T) (root, kid int64) {
	t.Helper()
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"how do channels work?"}`)
	if code != http.StatusAccepted {
		t.Fatalf("create: %d %v", code, run)
	}
	root = int64(run["id"].(float64))
	ctx := context.Background()
	pool := b.agent.Pool()
	if err := pool.QueryRow(ctx, `INSERT INTO gb_agent_research_runs (user_id, parent_id, root_id, depth, name, reason,
			topic, model, dataset, max_steps)
		SELECT user_id, id, id, 1, 'kid', 'one part', 'channels', model, dataset, 5 FROM gb_agent_research_runs WHERE id = $1
		RETURNING id`, root).Scan(&kid); err != nil {
		t.Fatal(err)
	}
	call := func(id, name, args string) string {
		return fmt.Sprintf(`{"role":"assistant","content":"looking","tool_calls":[{"id":%q,"name":%q,"arguments":%s}]}`,
			id, name, args)
	}
	result := func(id, name, text string) string {
		b, _ := json.Marshal(map[string]string{"role": "tool", "tool_call_id": id, "name": name, "content": text})
		return string(b)
	}
	steps := []struct {
		run  int64
		step int
		msgs []string
	}{
		{root, 1, []string{`{"role":"user","content":"how do channels work?"}`, call("c1", "spawn_subagent", `{"name": "kid"}`),
			result("c1", "spawn_subagent", "spawned kid")}},
		{kid, 1, []string{call("k1", "search", `{"query":"<b>channels</b>"}`), result("k1", "search", "3 results")}},
		{root, 2, []string{call("c2", "fetch", `{"url":"https://go.dev/ref/spec"}`), result("c2", "fetch", longResult)}},
		{kid, 2, []string{`{"role":"assistant","content":"# Kid report"}`}},
		{root, 3, []string{`{"role":"assistant","content":"# Report"}`}},
	}
	for _, s := range steps {
		if _, err := pool.Exec(ctx, `INSERT INTO gb_agent_research_steps (run_id, step, messages, prompt_tokens,
				cached_tokens, completion_tokens, reasoning_tokens, cost_usd, model, started_at, model_ms, tool_ms,
				retries, retry_outcomes, compaction)
			VALUES ($1, $2, $3, 100, 40, 10, 5, 0.25, 'm1', now(), 1200, 300, $4, $5, $6)`,
			s.run, s.step, "["+strings.Join(s.msgs, ",")+"]", s.step-1, retryOutcomes(s.step),
			compactionOf(s.step)); err != nil {
			t.Fatal(err)
		}
	}
	return root, kid
}

func retryOutcomes(step int) []string {
	out := []string{}
	for range step - 1 {
		out = append(out, "rate limited")
	}
	return out
}

func compactionOf(step int) *string {
	if step != 3 {
		return nil
	}
	s := `{"level":1,"stubbed":2,"trimmed":0,"tokens_before":9000,"tokens_after":4000}`
	return &s
}

// stepsPage reads a page of steps and returns it with its status.
func (b *testBundle) stepsPage(t *testing.T, key string, id int64, query string) (int, map[string]any) {
	t.Helper()
	return b.call(t, key, "GET", "/v1/gb/research/"+strconv.FormatInt(id, 10)+"/steps"+query, "")
}

// stepKeys names the steps of a page "agent:step".
func stepKeys(page map[string]any) []string {
	var out []string
	steps, _ := page["steps"].([]any)
	for _, s := range steps {
		m := s.(map[string]any)
		out = append(out, fmt.Sprintf("%s:%v", m["agent"], m["step"]))
	}
	return out
}

func TestStepsArePagedAcrossTheTreeNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	root, kid := b.stepTree(t)

	var got []string
	cursor, pages := "", 0
	for {
		code, page := b.stepsPage(t, b.alice, root, "?limit=2"+cursor)
		if code != http.StatusOK {
			t.Fatalf("page %d: %d %v", pages, code, page)
		}
		pages++
		got = append(got, stepKeys(page)...)
		if page["has_more"] != true {
			break
		}
		if pages > 5 {
			t.Fatal("the pages do not end")
		}
		cursor = "&cursor=" + page["next_cursor"].(string)
	}
	if want := "root:3 kid:2 root:2 kid:1 root:1"; strings.Join(got, " ") != want || pages != 3 {
		t.Errorf("newest first in pages of 2: %v in %d pages, want %s in 3", got, pages, want)
	}

	cases := []struct{ query, want string }{
		{"?order=asc", "root:1 kid:1 root:2 kid:2 root:3"},
		{"?run=" + strconv.FormatInt(kid, 10), "kid:2 kid:1"},
		{"?after=1&order=asc", "root:2 kid:2 root:3"},
		{"?after=1&before=3&order=asc", "root:2 kid:2"},
		{"?step=2", "root:2"},
		{"?step=2&run=" + strconv.FormatInt(kid, 10), "kid:2"},
	}
	for _, c := range cases {
		code, page := b.stepsPage(t, b.alice, root, c.query)
		if code != http.StatusOK || strings.Join(stepKeys(page), " ") != c.want {
			t.Errorf("%s: %d %v, want %s", c.query, code, stepKeys(page), c.want)
		}
	}
	// From the kid, only its own steps: the subtree below it.
	if code, page := b.stepsPage(t, b.alice, kid, ""); code != http.StatusOK || strings.Join(stepKeys(page), " ") != "kid:2 kid:1" {
		t.Errorf("the kid's subtree: %d %v", code, stepKeys(page))
	}
	// A cursor of order=asc finds what was committed since.
	_, first := b.stepsPage(t, b.alice, root, "?order=asc")
	_, since := b.stepsPage(t, b.alice, root, "?order=asc&cursor="+first["next_cursor"].(string))
	if len(stepKeys(since)) != 0 || since["has_more"] != false || since["next_cursor"] != "" {
		t.Errorf("after the last step: %v", since)
	}
}

func TestStepsCarryTheirDetails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	root, _ := b.stepTree(t)
	code, page := b.stepsPage(t, b.alice, root, "?step=3")
	if code != http.StatusOK {
		t.Fatalf("%d %v", code, page)
	}
	s := page["steps"].([]any)[0].(map[string]any)
	tokens := s["tokens"].(map[string]any)
	cmp := s["compaction"].(map[string]any)
	if s["model"] != "m1" || s["model_ms"] != float64(1200) || s["tool_ms"] != float64(300) || s["cost_usd"] != 0.25 ||
		tokens["prompt"] != float64(100) || tokens["cached"] != float64(40) || tokens["completion"] != float64(10) ||
		tokens["reasoning"] != float64(5) || s["retries"] != float64(2) || s["started_at"] == nil ||
		fmt.Sprint(s["retry_outcomes"]) != "[rate limited rate limited]" ||
		cmp["level"] != float64(1) || cmp["stubbed"] != float64(2) || cmp["tokens_before"] != float64(9000) {
		t.Errorf("step 3: %v", s)
	}
	_, page = b.stepsPage(t, b.alice, root, "?step=1")
	s = page["steps"].([]any)[0].(map[string]any)
	msgs := s["messages"].([]any)
	tc := msgs[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	res := msgs[2].(map[string]any)
	if s["compaction"] != nil || len(msgs) != 3 || tc["name"] != "spawn_subagent" || tc["arguments"] != `{"name":"kid"}` ||
		res["role"] != "tool" || res["name"] != "spawn_subagent" || res["content"] != "spawned kid" || s["truncated"] != false {
		t.Errorf("step 1: %v", s)
	}
	_, page = b.stepsPage(t, b.alice, root, "?step=1&messages=false")
	if _, ok := page["steps"].([]any)[0].(map[string]any)["messages"]; ok {
		t.Errorf("messages=false: %v", page)
	}
}

func TestStepResultsAreCutWithAWayToReadThemWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	root, _ := b.stepTree(t)
	result := func(query string) (map[string]any, map[string]any) {
		t.Helper()
		code, page := b.stepsPage(t, b.alice, root, query)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %v", query, code, page)
		}
		s := page["steps"].([]any)[0].(map[string]any)
		msgs := s["messages"].([]any)
		return s, msgs[len(msgs)-1].(map[string]any)
	}
	s, m := result("?step=2")
	if m["content"] != longResult[:2*2000] || m["truncated"] != true || m["content_chars"] != float64(5000) || s["truncated"] != true {
		t.Errorf("cut at 2000: %d characters, truncated %v, content_chars %v, step truncated %v",
			len([]rune(m["content"].(string))), m["truncated"], m["content_chars"], s["truncated"])
	}
	if _, m = result("?step=2&chars=100"); len([]rune(m["content"].(string))) != 100 || m["truncated"] != true {
		t.Errorf("chars=100: %d characters", len([]rune(m["content"].(string))))
	}
	s, m = result("?step=2&full=true&run=" + strconv.FormatInt(root, 10))
	if m["content"] != longResult || m["truncated"] != nil || s["truncated"] != false {
		t.Errorf("full: %d characters, truncated %v", len([]rune(m["content"].(string))), m["truncated"])
	}
}

func TestStepsOfAnotherUsersResearchAreNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	root, kid := b.stepTree(t)
	for _, id := range []int64{root, kid} {
		if code, body := b.stepsPage(t, b.bob, id, ""); code != http.StatusNotFound {
			t.Errorf("bob reads the steps of alice's %d: %d %v", id, code, body)
		}
	}
	if code, _ := b.stepsPage(t, "", root, ""); code != http.StatusUnauthorized {
		t.Errorf("no key: %d", code)
	}
	// Bob's own research does not open alice's agents either.
	code, run := b.call(t, b.bob, "POST", "/v1/gb/research", `{"topic":"bob's"}`)
	if code != http.StatusAccepted {
		t.Fatalf("create: %d %v", code, run)
	}
	bobs := int64(run["id"].(float64))
	if code, body := b.stepsPage(t, b.bob, bobs, "?run="+strconv.FormatInt(kid, 10)); code != http.StatusNotFound ||
		body["error"].(map[string]any)["field"] != "run" {
		t.Errorf("bob names alice's agent: %d %v", code, body)
	}
	if code, body := b.stepsPage(t, b.alice, root, "?step=9"); code != http.StatusNotFound {
		t.Errorf("a step the run does not have: %d %v", code, body)
	}
}

func TestStepsRefuseBadParameters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	root, _ := b.stepTree(t)
	for query, field := range map[string]string{
		"?limit=0": "limit", "?limit=101": "limit", "?order=up": "order", "?full=true": "full",
		"?chars=5": "chars", "?step=0": "step", "?cursor=x": "cursor", "?messages=no": "messages", "?run=-1": "run",
	} {
		code, body := b.stepsPage(t, b.alice, root, query)
		e, _ := body["error"].(map[string]any)
		if code != http.StatusBadRequest || e["field"] != field {
			t.Errorf("%s: %d %v, want 400 naming %s", query, code, body, field)
		}
	}
}
