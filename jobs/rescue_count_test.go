package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// TestRescuesAreCountedFromWhatEachRescueRecorded: a step job that loses
// its worker again and again, as one does in a crash storm, is rescued
// each time through the maintenance pass alone, each rescue reading what
// the one before wrote. Every rescue gives its attempt back, however many
// there are (13 here, over StepMaxAttempts); the count starts again when
// the run records a step; and the MaxStepRescues-th rescue of the same
// step ends the run saying so.
func TestRescuesAreCountedFromWhatEachRescueRecorded(t *testing.T) {
	t.Parallel()
	// A job running for longer than RescueStuckJobsAfter is rescued in the
	// next pass, with no liveness to wait for.
	b := setup(t, setupOpts{noWork: true,
		config: jobs.Config{StepTimeout: time.Second, Slice: -1, RescueStuckJobsAfter: 2 * time.Second}})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	lose := func() jobs.MaintainResult {
		t.Helper()
		// A worker takes the job (its attempt counts) and vanishes with it.
		if _, err := b.pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = attempt + 1,
			attempted_at = now() - interval '1 hour', attempted_by = attempted_by || '{gone}'::text[]
			WHERE args @> jsonb_build_object('run_id', $1::bigint)`, run.ID); err != nil {
			t.Fatal(err)
		}
		res, err := b.agent.Maintain(ctx, jobs.MaintainParams{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	check := func(step, rescues int) {
		t.Helper()
		var state string
		var attempt, gotStep, gotRescues int
		if err := b.pool.QueryRow(ctx, `SELECT state, attempt, coalesce((metadata->>'gb:rescued_step')::int, 0),
			coalesce((metadata->>'gb:rescues')::int, 0) FROM river_job WHERE args @> jsonb_build_object('run_id', $1::bigint)`,
			run.ID).Scan(&state, &attempt, &gotStep, &gotRescues); err != nil {
			t.Fatal(err)
		}
		if state != "retryable" || attempt != 0 || gotStep != step || gotRescues != rescues {
			t.Fatalf("after rescue %d of step %d: %s at attempt %d, step %d rescued %d times; "+
				"want retryable at attempt 0 (given back)", rescues, step, state, attempt, gotStep, gotRescues)
		}
	}
	for i := 1; i <= 3; i++ {
		if res := lose(); res.Rescued != 1 || res.Discarded != 0 {
			t.Fatalf("rescue %d of step 1: %+v", i, res)
		}
		check(1, i)
	}
	// The run records its first step: the job now makes step 2.
	if _, err := b.pool.Exec(ctx, `UPDATE gb_agent_research_runs SET steps = 1 WHERE id = $1`, run.ID); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < jobs.MaxStepRescues; i++ {
		if res := lose(); res.Rescued != 1 || res.Discarded != 0 {
			t.Fatalf("rescue %d of step 2: %+v", i, res)
		}
		check(2, i)
	}
	if res := lose(); res.Discarded != 1 || res.Lost != 1 {
		t.Fatalf("rescue %d of step 2: %+v; want the job discarded and its run ended", jobs.MaxStepRescues, res)
	}
	r, err := jobs.GetRun(ctx, b.pool, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := "step 2 took its worker down 10 times"; r.Status != jobs.StatusFailed || !strings.Contains(r.Error, want) {
		t.Fatalf("%s %q; want failed with %q", r.Status, r.Error, want)
	}
}
