package providerbench_test

import (
	"context"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// Trees on the Converse fake asking far more than its request quota all
// succeed: 90 calls against 60 a minute, up to 40 agents ready to call at
// once, each of whose calls takes 200 ms (up to 12,000 a minute offered,
// two hundred times the quota). Bedrock says nothing of its quotas in
// its answers, so the operator states them (GB_RATE_LIMITS, from Service
// Quotas): with them, the shared limiter keeps near the quota and Bedrock
// throttles almost nothing; without them, ThrottlingExceptions alone pace
// the calls, and still no run fails.
func TestBedrockTreesShareARequestQuota(t *testing.T) {
	t.Parallel()
	const rpm, trees = 60, 10
	for _, tc := range []struct {
		name       string
		configured bool
	}{{"quota configured", true}, {"quota not configured", false}} {
		t.Run(tc.name, func(t *testing.T) { // one after the other: each holds two workers busy
			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
			defer cancel()
			o := providerbench.RateOptions{EnvOptions: providerbench.EnvOptions{Pool: dbtest.NewPool(t), Workers: 2,
				ProviderName: providerbench.ProviderBedrock}, Trees: trees, RPM: rpm}
			if tc.configured {
				o.Agent.RateLimits = map[string]jobs.RateLimit{providerbench.BedrockModelDefault: {RPM: rpm}}
			}
			r, err := providerbench.RateLimits(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d of %d runs succeeded in %s; %d requests, %d throttled (%.1f%%); throughput %.0f%% of the %s quota; "+
				"jobs running %.1f on average (peak %d), %d calls at the provider at most; $%.4f", r.Succeeded, r.Runs,
				r.Elapsed.Round(time.Second), r.Provider.Requests, r.Refused, 100*r.Share, 100*r.Throughput, r.Binding,
				r.MeanRunning, r.PeakRunning, r.PeakInFlight, r.Provider.CostUSD)
			if r.Succeeded != r.Runs || r.Runs != trees*(1+providerbench.SubagentsPerTree) {
				t.Errorf("%d of %d runs succeeded: %v", r.Succeeded, r.Runs, r.Errors)
			}
			if tc.configured && r.Share > 0.05 {
				t.Errorf("%d of %d requests throttled, over 5%%", r.Refused, r.Provider.Requests)
			}
			if tc.configured && r.Throughput < 0.85 {
				t.Errorf("throughput %.2f of the %s quota, under 0.85", r.Throughput, r.Binding)
			}
			checkLedger(t, r.Provider, r.Ledger)
		})
	}
}
