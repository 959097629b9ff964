package providerbench_test

import (
	"context"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// Trees offered far more than the provider's request limit all succeed:
// two workers share the limit through Postgres, calls wait for capacity in
// the queue rather than in a worker slot, and the provider refuses almost
// none of them.
func TestTreesShareARequestLimit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := providerbench.RateLimits(ctx, providerbench.RateOptions{
		EnvOptions: providerbench.EnvOptions{Pool: dbtest.NewPool(t), Workers: 2},
		Trees:      6, RPM: 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d runs succeeded in %s; %d requests, %d refused (%.1f%%); throughput %.0f%% of the %s limit; "+
		"jobs running %.1f on average (peak %d), %d calls at the provider at most", r.Succeeded, r.Runs,
		r.Elapsed.Round(time.Second), r.Provider.Requests, r.Refused, 100*r.Share, 100*r.Throughput, r.Binding,
		r.MeanRunning, r.PeakRunning, r.PeakInFlight)
	if r.Succeeded != r.Runs || r.Runs != 6*(1+providerbench.SubagentsPerTree) {
		t.Errorf("%d of %d runs succeeded: %v", r.Succeeded, r.Runs, r.Errors)
	}
	if r.Share > 0.05 {
		t.Errorf("%d of %d requests refused, over 5%%", r.Refused, r.Provider.Requests)
	}
	if r.Throughput < 0.85 {
		t.Errorf("throughput %.2f of the %s limit, under 0.85", r.Throughput, r.Binding)
	}
	checkLedger(t, r.Provider, r.Ledger)
}
