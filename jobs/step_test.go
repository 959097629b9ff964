package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

func TestResearchRunsToReport(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	run, created, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID,
		Topic: "How does the context package carry cancellation signals?"})
	if err != nil || !created {
		t.Fatalf("start: %v created=%v", err, created)
	}
	if run.Status != jobs.StatusQueued {
		t.Fatalf("new run status %s, want queued", run.Status)
	}
	done := waitEnded(t, b.pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded {
		t.Fatalf("status %s error %q", done.Status, done.Error)
	}
	t.Log(done.Report)
	if !strings.Contains(done.Report, "## Sources") || !strings.Contains(done.Report, "https://pkg.go.dev/context") {
		t.Fatalf("report lacks Go documentation sources:\n%s", done.Report)
	}
	var rows, maxStep int
	if err := b.pool.QueryRow(ctx, "SELECT count(*), max(step) FROM gb_agent_research_steps WHERE run_id = $1",
		run.ID).Scan(&rows, &maxStep); err != nil {
		t.Fatal(err)
	}
	if rows != done.Steps || maxStep != done.Steps {
		t.Fatalf("steps %d but %d conversation rows (max step %d)", done.Steps, rows, maxStep)
	}
	if done.Tokens == 0 || done.Tokens != done.PromptTokens+done.CompletionTokens {
		t.Fatalf("usage not recorded: %+v", done)
	}
	states, err := jobs.States(ctx, b.pool, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range states {
		seen[s.State] = true
	}
	for _, want := range []string{"queued", "thinking", "searching", "reading", "writing", "done"} {
		if !seen[want] {
			t.Errorf("state %s never recorded; got %v", want, states)
		}
	}
}
