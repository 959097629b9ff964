package providerbench_test

import (
	"context"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// Workers stopped again and again in the middle of their calls, as Lambda
// deadlines stop them: every run ends with its report, and the ledger holds
// each call the provider billed exactly once (an interrupted job's retry is
// a call of its own, not the same row written over).
func TestInterruptedWorkersCountEveryBilledCall(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := providerbench.Interruptions(ctx, providerbench.InterruptOptions{
		EnvOptions: providerbench.EnvOptions{Pool: dbtest.NewPool(t)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d stops; %d of %d runs succeeded; the provider billed %d calls; the ledger counts %d (%d at their estimate, %d never billed)",
		r.Stops, r.Succeeded, r.Runs, r.Provider.Billed, r.Ledger.Billed, r.Ledger.Estimated, r.Ledger.EstimatedUnbilled)
	if r.Succeeded != r.Runs {
		t.Errorf("%d of %d runs succeeded: %v", r.Succeeded, r.Runs, r.Errors)
	}
	if r.Ledger.Estimated == 0 {
		t.Errorf("no call was cut off: the test needs stops in the middle of calls")
	}
	for _, m := range r.Ledger.Mismatches {
		t.Errorf("ledger: %s", m)
	}
	if r.Ledger.Billed-r.Ledger.EstimatedUnbilled != r.Provider.Billed {
		t.Errorf("the ledger counts %d billed calls (%d never billed), the provider %d", r.Ledger.Billed,
			r.Ledger.EstimatedUnbilled, r.Provider.Billed)
	}
}
