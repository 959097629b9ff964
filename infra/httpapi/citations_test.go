package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// GET /v1/gb/research/{id}/citations answers the owner the verdicts of the
// last round of the check, with the run's counts; anyone else gets 404.
// The check's rows are written as the step that records a report writes
// them (no worker runs here).
func TestCitationsRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"channels?","citations":"flag"}`)
	if code != http.StatusAccepted || run["citations_mode"] != "flag" || run["citations"] != nil {
		t.Fatalf("create: %d %v", code, run)
	}
	id := fmt.Sprint(run["id"])
	code, got := b.call(t, b.alice, "GET", "/v1/gb/research/"+id+"/citations", "")
	if code != http.StatusOK || got["counts"] != nil || len(got["citations"].([]any)) != 0 || got["mode"] != "flag" {
		t.Fatalf("before a check: %d %v", code, got)
	}
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO gb_citations (run_id, round, claim_index, claim, marker, ref, verdict, claim_verdict, passage, score, reason)
			VALUES ($1, 0, 0, 'old claim [1]', 1, 'https://a', 'unread', 'unread', '', 0, 'never read'),
			       ($1, 1, 0, 'Sends happen before receives [1].', 1, 'https://go.dev/ref/mem', 'supported', 'supported',
			        'A send on a channel is synchronized before the completion of the corresponding receive.', 0.8, ''),
			       ($1, 1, 1, 'Channels were added in 2031.', 0, '', 'uncited', 'uncited', '', 0, '')`,
		`UPDATE gb_agent_research_runs SET citations = '{"claims":2,"supported":1,"weak":0,"unsupported":0,"unread":0,"uncited":1}',
			citations_before = '{"claims":1,"supported":0,"weak":0,"unsupported":0,"unread":1,"uncited":0}' WHERE id = $1`,
	} {
		if _, err := b.agent.Pool().Exec(ctx, q, run["id"]); err != nil {
			t.Fatal(err)
		}
	}
	code, got = b.call(t, b.alice, "GET", "/v1/gb/research/"+id+"/citations", "")
	list, _ := got["citations"].([]any)
	if code != http.StatusOK || got["round"] != float64(1) || len(list) != 2 {
		t.Fatalf("after a revision: %d %v", code, got)
	}
	first := list[0].(map[string]any)
	if first["verdict"] != "supported" || !strings.Contains(fmt.Sprint(first["passage"]), "synchronized before") ||
		fmt.Sprint(got["counts"].(map[string]any)["uncited"]) != "1" || got["counts_before"] == nil {
		t.Errorf("after a revision: %v", got)
	}
	code, runNow := b.call(t, b.alice, "GET", "/v1/gb/research/"+id, "")
	if c, _ := runNow["citations"].(map[string]any); code != http.StatusOK || c["supported"] != float64(1) ||
		runNow["citations_before"] == nil {
		t.Errorf("the run: %d %v", code, runNow)
	}
	for _, key := range []string{b.bob, ""} {
		code, body := b.call(t, key, "GET", "/v1/gb/research/"+id+"/citations", "")
		if want := map[string]int{b.bob: http.StatusNotFound, "": http.StatusUnauthorized}[key]; code != want {
			t.Errorf("key %q: %d %v, want %d", key, code, body, want)
		}
	}
}

// A research asks for off, flag or revise; anything else is a 400 that
// names the field and the allowed values.
func TestCitationsModeRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"x","citations":"always"}`)
	if e := errorOf(body); code != http.StatusBadRequest || e["field"] != "citations" ||
		!strings.Contains(fmt.Sprint(e["message"]), "off, flag or revise") {
		t.Fatalf("create with citations always: %d %v", code, body)
	}
	code, body = b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"x","citations":"off"}`)
	if code != http.StatusAccepted || body["citations_mode"] != "off" {
		t.Fatalf("create with citations off: %d %v", code, body)
	}
}
