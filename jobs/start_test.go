package jobs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/gbresearch/gb/jobs"
)

// TestStartChecksInOneTransaction starts researches through every check a
// start makes in its one batch (the user, the schedule key, the dataset,
// the user's researches going) and checks that a refused start writes
// nothing, a start writes its run with its first state and event, and
// concurrent starts of one user never pass the bound.
func TestStartChecksInOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true}) // nothing runs: the runs stay queued
	ctx := context.Background()
	count := func() int {
		var n int
		if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM gb_agent_research_runs").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	if _, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID + 1000, Topic: "nobody's"}); err == nil {
		t.Error("a start for no user was accepted")
	}
	_, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "t", Dataset: "no-such-set"})
	var fe *jobs.FieldError
	if !errors.As(err, &fe) || fe.Field != "dataset" || !strings.Contains(fe.Msg, jobs.DefaultDataset) {
		t.Errorf("an unknown dataset: %v", err)
	}
	if n := count(); n != 0 {
		t.Fatalf("refused starts wrote %d runs", n)
	}

	first, created, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "nightly", ScheduleKey: "k1"})
	if err != nil || !created {
		t.Fatalf("start: %v (created %v)", err, created)
	}
	again, created, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "nightly", ScheduleKey: "k1"})
	if err != nil || created || again.ID != first.ID {
		t.Fatalf("the schedule key's second start: run %v, created %v, %v; want run %d, not created", again, created, err, first.ID)
	}
	states, err := jobs.States(ctx, b.pool, first.ID)
	if err != nil || len(states) != 1 || states[0].State != jobs.StateQueued || states[0].Step != 0 {
		t.Errorf("the new run's states: %+v, %v", states, err)
	}
	events, err := jobs.Events(ctx, b.pool, first.ID, 0, 10)
	if err != nil || len(events) != 1 || events[0].Kind != jobs.EventQueued || !strings.Contains(string(events[0].Data), "nightly") {
		t.Errorf("the new run's events: %+v, %v", events, err)
	}
	if first.RootID != first.ID {
		t.Errorf("root_id %d, want its own id %d", first.RootID, first.ID)
	}

	// The user has one going; of many concurrent starts, exactly enough
	// pass to reach the bound, and the rest are refused.
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed, refused := 0, 0
	for range 8 {
		wg.Go(func() {
			_, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "many"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				passed++
			case errors.Is(err, jobs.ErrTooManyWorking):
				refused++
			default:
				t.Errorf("a concurrent start: %v", err)
			}
		})
	}
	wg.Wait()
	if passed != jobs.MaxWorkingPerUser-1 || refused != 8-passed {
		t.Errorf("%d starts passed and %d were refused; want %d and %d", passed, refused, jobs.MaxWorkingPerUser-1, 9-jobs.MaxWorkingPerUser)
	}
	if n := count(); n != jobs.MaxWorkingPerUser {
		t.Errorf("%d runs, want %d", n, jobs.MaxWorkingPerUser)
	}
}
