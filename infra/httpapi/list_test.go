package httpapi_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestListActiveAndWithoutReports checks the list's filters and fields:
// status=active lists the runs that have not ended (a waiting parent with
// them), a page leaves the reports out unless include=report, and values
// the API does not know answer 400.
func TestListActiveAndWithoutReports(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []int64
	for i := range 3 {
		code, run := b.call(t, b.alice, "POST", "/v1/gb/research", fmt.Sprintf(`{"topic":"question %d"}`, i))
		if code != 202 {
			t.Fatalf("create answered %d %v", code, run)
		}
		ids = append(ids, int64(run["id"].(float64)))
	}
	working, waiting, ended := ids[0], ids[1], ids[2]
	pool := b.agent.Pool()
	for _, q := range []struct {
		sql string
		id  int64
	}{
		{`UPDATE gb_agent_research_runs SET status = 'working' WHERE id = $1`, working},
		{`UPDATE gb_agent_research_runs SET status = 'waiting' WHERE id = $1`, waiting},
		{`UPDATE gb_agent_research_runs SET status = 'succeeded', report = 'the report', ended_at = now() WHERE id = $1`, ended},
	} {
		if _, err := pool.Exec(context.Background(), q.sql, q.id); err != nil {
			t.Fatal(err)
		}
	}
	listed := func(query string) ([]int64, []map[string]any) {
		t.Helper()
		code, page := b.call(t, b.alice, "GET", "/v1/gb/research"+query, "")
		if code != 200 {
			t.Fatalf("GET /v1/gb/research%s answered %d %v", query, code, page)
		}
		var got []int64
		var runs []map[string]any
		for _, r := range page["runs"].([]any) {
			m := r.(map[string]any)
			got = append(got, int64(m["id"].(float64)))
			runs = append(runs, m)
		}
		return got, runs
	}
	if got, _ := listed("?status=active"); !slices.Equal(got, []int64{waiting, working}) {
		t.Errorf("status=active listed %v, want the waiting %d and the working %d", got, waiting, working)
	}
	if got, _ := listed("?status=working"); !slices.Equal(got, []int64{working}) {
		t.Errorf("status=working listed %v, want %d", got, working)
	}
	_, runs := listed("")
	for _, r := range runs {
		if _, ok := r["report"]; ok {
			t.Errorf("run %v of the list has a report without include=report", r["id"])
		}
	}
	_, runs = listed("?include=report")
	for _, r := range runs {
		want := ""
		if int64(r["id"].(float64)) == ended {
			want = "the report"
		}
		if r["report"] != want {
			t.Errorf("with include=report, run %v has report %v, want %q", r["id"], r["report"], want)
		}
	}
	for _, q := range []string{"?status=nope", "?include=everything"} {
		if code, body := b.call(t, b.alice, "GET", "/v1/gb/research"+q, ""); code != 400 {
			t.Errorf("GET /v1/gb/research%s answered %d %v, want 400", q, code, body)
		}
	}
}
