package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// recordedResearch starts a research of the key's user and gives its root
// a record of three steps, as a worker would have written it: a search
// (step 1), a search whose arguments are written the way models write
// them (step 2), and the report (step 3); the research has ended. It
// returns the run id.
func (b *testBundle) recordedResearch(t *testing.T, key string) string {
	t.Helper()
	code, run := b.call(t, key, "POST", "/v1/gb/research", `{"topic":"How do channels close?"}`)
	if code != http.StatusAccepted {
		t.Fatalf("create: %d %v", code, run)
	}
	id := fmt.Sprint(run["id"])
	steps := []string{
		`[{"role":"user","content":"How do channels close?"},
		  {"role":"assistant","tool_calls":[{"id":"c1","name":"search","arguments":"{\"query\":\"close\"}"}]},
		  {"role":"tool","tool_call_id":"c1","name":"search","content":"close(ch) closes it"}]`,
		`[{"role":"assistant","tool_calls":[{"id":"c2","name":"search","arguments":"{ \"query\" : \"range \\u0026 close\" }"}]},
		  {"role":"tool","tool_call_id":"c2","name":"search","content":"range ends on close"}]`,
		`[{"role":"assistant","content":"# Report\n\nA channel is closed with close [1]."}]`,
	}
	ctx := context.Background()
	for i, m := range steps {
		if _, err := b.agent.Pool().Exec(ctx, `INSERT INTO gb_agent_research_steps (run_id, step, messages, prompt_tokens, cost_usd)
			VALUES ($1, $2, $3::jsonb, 100, 0.001)`, id, i+1, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.agent.Pool().Exec(ctx, `DELETE FROM river_job WHERE (args->>'run_id')::bigint = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.agent.Pool().Exec(ctx, `UPDATE gb_agent_research_runs SET status = 'succeeded', state = 'done', steps = 3,
		report = '# Report', cost_usd = 0.003, ended_at = now() WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// A fork is refused, naming the field, for what it cannot replay, and is
// another user's research's 404.
func TestForkRefusesWhatItCannotReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.recordedResearch(t, b.alice)
	path := "/v1/gb/research/" + id + "/fork"
	for _, c := range []struct{ name, body, field, says string }{
		{"no step", `{}`, "step", "required"},
		{"a negative step", `{"step":-1}`, "step", "0 to replay none"},
		{"past the record", `{"step":4}`, "step", "recorded 3 steps"},
		{"the report", `{"step":3}`, "step", "report"},
		{"a sub-agent", `{"step":1,"agent":` + id + `1}`, "agent", "root"},
		{"an unknown model", `{"step":1,"model":"gpt-nope"}`, "model", "not configured"},
		{"steps to replay", `{"step":2,"max_steps":2}`, "max_steps", "more than 2"},
		{"an explicit 0", `{"step":1,"max_steps":0}`, "max_steps", "leave it out"},
		{"a pin", `{"step":1,"pin":"newest"}`, "pin", "latest"},
		{"citations", `{"step":1,"citations":"always"}`, "citations", ""},
		{"an unknown field", `{"step":1,"prompts":"x"}`, "prompts", ""},
		{"a long instruction", `{"step":1,"instruction":"` + strings.Repeat("é", 4001) + `"}`, "instruction", "4000"},
	} {
		code, got := b.call(t, b.alice, "POST", path, c.body)
		e := errorOf(got)
		if code != http.StatusBadRequest || e["field"] != c.field || !strings.Contains(fmt.Sprint(e["message"]), c.says) {
			t.Errorf("%s: %d %v", c.name, code, got)
		}
	}
	if code, got := b.call(t, b.bob, "POST", path, `{"step":1}`); code != http.StatusNotFound {
		t.Errorf("another user's fork: %d %v", code, got)
	}
}

// A fork answers 202 with its Location, says what it was forked from, and
// its steps are the original's up to the step, byte for byte, marked
// replayed and costing nothing.
func TestForkReplaysTheRecordedSteps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.recordedResearch(t, b.alice)
	code, fork := b.call(t, b.alice, "POST", "/v1/gb/research/"+id+"/fork",
		`{"step":2,"max_steps":6,"instruction":"Say when a closed channel panics."}`)
	if code != http.StatusAccepted || fmt.Sprint(fork["forked_from"]) != id || fork["fork_step"] != float64(2) ||
		fork["steps"] != float64(2) || fork["max_steps"] != float64(6) || fork["status"] != "queued" || fork["cost_usd"] != float64(0) {
		t.Fatalf("fork: %d %v", code, fork)
	}
	fid := fmt.Sprint(fork["id"])
	var queued int
	if err := b.agent.Pool().QueryRow(context.Background(), `SELECT count(*) FROM river_job
		WHERE (args->>'run_id')::bigint = $1 AND (args->>'step')::int = 3`, fid).Scan(&queued); err != nil || queued != 1 {
		t.Errorf("the fork's next step jobs: %d (%v)", queued, err)
	}
	orig := stepsOf(t, b, id)
	got := stepsOf(t, b, fid)
	if len(got) != 2 {
		t.Fatalf("the fork's steps: %v", got)
	}
	for i, s := range got {
		if s["replayed"] != true || s["cost_usd"] != float64(0) || fmt.Sprint(s["messages"]) != fmt.Sprint(orig[i]["messages"]) {
			t.Errorf("fork step %d: %v\noriginal: %v", i+1, s, orig[i])
		}
	}
	if code, _ := b.call(t, b.bob, "GET", "/v1/gb/research/"+fid, ""); code != http.StatusNotFound {
		t.Errorf("another user reads the fork: %d", code)
	}
}

// stepsOf is the steps of a run, oldest first, with their messages.
func stepsOf(t *testing.T, b *testBundle, id string) []map[string]any {
	t.Helper()
	code, page := b.call(t, b.alice, "GET", "/v1/gb/research/"+id+"/steps?order=asc", "")
	if code != http.StatusOK {
		t.Fatalf("steps of %s: %d %v", id, code, page)
	}
	var out []map[string]any
	for _, s := range page["steps"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}
