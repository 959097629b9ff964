package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/kb"
)

// Notes over the API: a research's notes are listed to its owner alone
// (GET .../notes of any run of the tree), a research started with
// notes_from naming the owner's own research lists it there, notes_from
// naming another user's research, a sub-agent, a missing run or nonsense
// is a 400 that names the field, and deleting the research deletes its
// notes.
func TestNotesRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"tides?"}`)
	if code != http.StatusAccepted {
		t.Fatalf("create: %d %v", code, run)
	}
	id := fmt.Sprint(run["id"])
	root := int64(run["id"].(float64))
	var kid int64
	if err := b.agent.Pool().QueryRow(ctx, `INSERT INTO gb_agent_research_runs (user_id, parent_id, root_id, depth, name, reason,
			topic, model, dataset, max_steps)
		SELECT user_id, id, id, 1, 'kid', 'one part', 'tides', model, dataset, 5 FROM gb_agent_research_runs WHERE id = $1
		RETURNING id`, root).Scan(&kid); err != nil {
		t.Fatal(err)
	}
	note, err := kb.Remember(ctx, b.agent.Pool(), root, kid, "Quorvexian tides", "quorvexian barrages")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{id, fmt.Sprint(kid)} {
		code, got := b.call(t, b.alice, "GET", "/v1/gb/research/"+path+"/notes", "")
		notes, _ := got["notes"].([]any)
		if code != http.StatusOK || len(notes) != 1 || notes[0].(map[string]any)["id"] != float64(note) ||
			notes[0].(map[string]any)["run_id"] != float64(kid) || got["root_id"] != float64(root) {
			t.Errorf("notes of run %s: %d %v", path, code, got)
		}
	}
	if code, got := b.call(t, b.bob, "GET", "/v1/gb/research/"+id+"/notes", ""); code != http.StatusNotFound {
		t.Errorf("another user reads the notes: %d %v", code, got)
	}

	code, second := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"more tides?","notes_from":[`+id+`,`+id+`]}`)
	if code != http.StatusAccepted {
		t.Fatalf("notes_from the owner's research: %d %v", code, second)
	}
	code, got := b.call(t, b.alice, "GET", fmt.Sprintf("/v1/gb/research/%v/notes", second["id"]), "")
	if from, _ := got["notes_from"].([]any); code != http.StatusOK || len(from) != 1 || from[0] != float64(root) || len(got["notes"].([]any)) != 0 {
		t.Errorf("notes of the second research: %d %v", code, got)
	}
	for body, want := range map[string]string{
		`{"topic":"x","notes_from":[` + id + `]}`:              "run " + id + " is not one of your researches",
		`{"topic":"x","notes_from":[` + fmt.Sprint(kid) + `]}`: fmt.Sprintf("run %d is a sub-agent; name its research, run %d", kid, root),
		`{"topic":"x","notes_from":[999999]}`:                  "run 999999 is not one of your researches",
		`{"topic":"x","notes_from":[0]}`:                       "0 is not a run id",
		`{"topic":"x","notes_from":"` + id + `"}`:              "",
		`{"topic":"x","notes_from":[` + manyIDs(21) + `]}`:     "names 21 researches; at most 20 are allowed",
	} {
		key := b.alice
		if strings.Contains(want, "not one of your") && !strings.Contains(want, "999999") {
			key = b.bob
		}
		code, got := b.call(t, key, "POST", "/v1/gb/research", body)
		e := errorOf(got)
		if code != http.StatusBadRequest || e["field"] != "notes_from" || !strings.Contains(fmt.Sprint(e["message"]), want) {
			t.Errorf("%s: %d %v, want 400 notes_from %q", body, code, got, want)
		}
	}

	if code, got := b.call(t, b.alice, "DELETE", "/v1/gb/research/"+id, ""); code != http.StatusOK && code != http.StatusNoContent {
		t.Fatalf("delete: %d %v", code, got)
	}
	var left int
	if err := b.agent.Pool().QueryRow(ctx, "SELECT count(*) FROM gb_kb_documents WHERE tree_id = $1", root).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d notes of the deleted research are left (%v)", left, err)
	}
}

// manyIDs is n distinct run ids, comma separated.
func manyIDs(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint(1000 + i)
	}
	return strings.Join(ids, ",")
}
