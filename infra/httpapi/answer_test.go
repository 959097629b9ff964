package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs"
)

// These tests answer a root parked on ask_owner through POST
// /v1/gb/research/{id}/answer. No worker runs: the root is parked as the
// step that asks parks it, and its resume is read from the database.

// startAsking starts an interactive research of the key's user and parks
// its root on a question due at until (an SQL time), as its ask_owner
// step would; it returns the run id.
func (b *testBundle) startAsking(t *testing.T, key, until string) string {
	t.Helper()
	code, run := b.call(t, key, "POST", "/v1/gb/research", `{"topic":"which?","interactive":true,"answer_timeout_seconds":3600}`)
	if code != http.StatusAccepted || run["interactive"] != true || run["answer_timeout_seconds"] != float64(3600) {
		t.Fatalf("create: %d %v", code, run)
	}
	id := fmt.Sprint(run["id"])
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{
		`DELETE FROM river_job WHERE (args->>'run_id')::bigint = $1`,
		`UPDATE gb_agent_research_runs SET status = 'waiting', state = 'input_required', steps = 1, wait_call_id = 'c1',
			wait_kind = 'owner', question = 'Which Go version?', wait_until = ` + until + ` WHERE id = $1`,
	} {
		if _, err := b.agent.Pool().Exec(ctx, q, n); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// stepJobs counts the step jobs of a run: one per resume.
func (b *testBundle) stepJobs(t *testing.T, id string) int {
	t.Helper()
	var n int
	if err := b.agent.Pool().QueryRow(context.Background(), `SELECT count(*) FROM river_job
		WHERE kind = $1 AND args->>'run_id' = $2`, jobs.StepKind, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAnswerResumesOnceUnderConcurrentAnswers(t *testing.T) {
	t.Parallel()
	const answers = 24
	b := setup(t)
	id := b.startAsking(t, b.alice, "now() + interval '1 hour'")
	code, got := b.call(t, b.alice, "GET", "/v1/gb/research/"+id, "")
	if code != http.StatusOK || got["question"] != "Which Go version?" || got["answer_deadline"] == nil ||
		got["state"] != "input_required" {
		t.Fatalf("the parked run: %d %v", code, got)
	}
	codes, bodies := b.callAtOnce(t, b.alice, "POST", "/v1/gb/research/"+id+"/answer", answers, func(i int) string {
		return fmt.Sprintf(`{"text":"Go 1.%d"}`, i)
	})
	won := 0
	for i, c := range codes {
		switch {
		case c == http.StatusOK:
			won++
			if bodies[i]["status"] != "working" || bodies[i]["question"] != nil {
				t.Errorf("the answer's run: %v", bodies[i])
			}
		case c == http.StatusConflict:
			if e := errorOf(bodies[i]); e["code"] != "not_asking" || !strings.Contains(fmt.Sprint(e["message"]), "answered already") {
				t.Errorf("a losing answer: %v", bodies[i])
			}
		default:
			t.Errorf("answer %d: %d %v", i, c, bodies[i])
		}
	}
	if won != 1 || b.stepJobs(t, id) != 1 {
		t.Fatalf("%d answers succeeded and the run has %d step jobs; want 1 and 1", won, b.stepJobs(t, id))
	}
}

func TestAnswerAfterTheDeadlineResumedIsAConflict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.startAsking(t, b.alice, "now() - interval '1 second'")
	// No wake job is left: the maintenance pass resumes the run as its
	// deadline would have.
	if res, err := b.agent.Maintain(context.Background(), jobs.MaintainParams{}); err != nil || res.Resumed != 1 {
		t.Fatalf("maintain: %+v %v", res, err)
	}
	code, body := b.call(t, b.alice, "POST", "/v1/gb/research/"+id+"/answer", `{"text":"late"}`)
	if e := errorOf(body); code != http.StatusConflict || !strings.Contains(fmt.Sprint(e["message"]), "deadline passed") {
		t.Fatalf("a late answer: %d %v, want 409 saying the deadline passed", code, body)
	}
	if n := b.stepJobs(t, id); n != 1 {
		t.Fatalf("the run has %d step jobs, want the deadline's 1", n)
	}
}

func TestAnswerOfAnotherUserOrToNoQuestionIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.startAsking(t, b.alice, "now() + interval '1 hour'")
	if code, _ := b.call(t, b.bob, "POST", "/v1/gb/research/"+id+"/answer", `{"text":"mine"}`); code != http.StatusNotFound {
		t.Errorf("bob answers alice's question: %d, want 404", code)
	}
	if code, _ := b.call(t, b.alice, "POST", "/v1/gb/research/999999/answer", `{"text":"x"}`); code != http.StatusNotFound {
		t.Errorf("an answer to no run: %d, want 404", code)
	}
	for _, c := range []struct{ body, field string }{
		{`{"text":""}`, "text"},
		{`{"text":"   "}`, "text"},
		{`{"text":"` + strings.Repeat("é", jobs.MaxAnswerLen+1) + `"}`, "text"},
		{`{"answer":"x"}`, "answer"},
	} {
		code, body := b.call(t, b.alice, "POST", "/v1/gb/research/"+id+"/answer", c.body)
		if e := errorOf(body); code != http.StatusBadRequest || e["field"] != c.field {
			t.Errorf("%.40s: %d %v, want 400 naming %s", c.body, code, body, c.field)
		}
	}
	if n := b.stepJobs(t, id); n != 0 {
		t.Fatalf("refused answers resumed the run: %d step jobs", n)
	}
	_, plain := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"plain"}`)
	code, body := b.call(t, b.alice, "POST", fmt.Sprintf("/v1/gb/research/%v/answer", plain["id"]), `{"text":"x"}`)
	if e := errorOf(body); code != http.StatusConflict || !strings.Contains(fmt.Sprint(e["message"]), "not started interactive") {
		t.Errorf("an answer to a research that asks nothing: %d %v, want 409", code, body)
	}
}

func TestCreateChecksTheAnswerTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct{ body, says string }{
		{`{"topic":"x","interactive":true,"answer_timeout_seconds":0}`, "leave it out"},
		{`{"topic":"x","interactive":true,"answer_timeout_seconds":4}`, "must be 5 to 604800"},
		{`{"topic":"x","interactive":true,"answer_timeout_seconds":604801}`, "must be 5 to 604800"},
		{`{"topic":"x","answer_timeout_seconds":60}`, "set interactive to true"},
	} {
		code, body := b.call(t, b.alice, "POST", "/v1/gb/research", c.body)
		if e := errorOf(body); code != http.StatusBadRequest || e["field"] != "answer_timeout_seconds" ||
			!strings.Contains(fmt.Sprint(e["message"]), c.says) {
			t.Errorf("%s: %d %v, want 400 naming answer_timeout_seconds saying %q", c.body, code, body, c.says)
		}
	}
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"x","interactive":true}`)
	if code != http.StatusAccepted || run["interactive"] != true || run["answer_timeout_seconds"] != float64(jobs.DefaultAnswerTimeoutSeconds) {
		t.Errorf("an interactive research with the default timeout: %d %v", code, run)
	}
	code, run = b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"x"}`)
	if code != http.StatusAccepted || run["interactive"] != false || run["answer_timeout_seconds"] != nil {
		t.Errorf("a research that is not interactive: %d %v", code, run)
	}
}
