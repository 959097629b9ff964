package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
)

// TestMaintainDeletesEachFinishedStateAfterItsRetention: completed,
// cancelled and discarded jobs are each deleted once their own retention
// has passed since they finished, and not before.
func TestMaintainDeletesEachFinishedStateAfterItsRetention(t *testing.T) {
	t.Parallel()
	b := newDrainBundle(t, &offline.Model{}, jobs.Config{})
	ctx := context.Background()
	finished := func(state string, age time.Duration) int64 {
		t.Helper()
		res, err := b.agent.River().Insert(ctx, jobs.StepArgs{RunID: 424242, Step: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.pool.Exec(ctx, `UPDATE river_job SET state = $2, attempt = 1,
			finalized_at = now() - $3 * interval '1 second' WHERE id = $1`,
			res.Job.ID, state, age.Seconds()); err != nil {
			t.Fatal(err)
		}
		return res.Job.ID
	}
	want := map[int64]bool{ // deleted?
		finished("completed", 90*time.Minute):  true,
		finished("completed", 30*time.Minute):  false,
		finished("cancelled", 90*time.Minute):  false,
		finished("cancelled", 150*time.Minute): true,
		finished("discarded", 150*time.Minute): false,
		finished("discarded", 200*time.Minute): true,
	}
	res, err := b.agent.Maintain(ctx, jobs.MaintainParams{
		CompletedRetention: time.Hour, CancelledRetention: 2 * time.Hour, DiscardedRetention: 3 * time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 3 {
		t.Errorf("deleted %d jobs, want 3", res.Deleted)
	}
	for id, deleted := range want {
		var n int
		if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE id = $1", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if (n == 0) != deleted {
			t.Errorf("job %d: deleted %v, want %v", id, n == 0, deleted)
		}
	}
}
