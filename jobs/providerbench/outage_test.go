package providerbench_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/fakeprovider"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// quickAgent waits out outages of seconds: backoff capped at half a
// second, snoozed steps made due at once. Its steps keep the default
// timeout: a call that answers is never cut off, however loaded the
// machine, so the ledger must equal the bill exactly.
var quickAgent = jobs.Config{MaintainInterval: 50 * time.Millisecond,
	Outage: jobs.OutageConfig{BackoffBase: 50 * time.Millisecond, BackoffCap: 500 * time.Millisecond}}

// agentFor is quickAgent for an outage of mode: a provider that hangs has
// its steps given up after 2 s, and the calls cut off count at their
// estimate.
func agentFor(mode fakeprovider.OutageMode) jobs.Config {
	c := quickAgent
	if mode == fakeprovider.OutageHang {
		c.StepTimeout = 2 * time.Second
	}
	return c
}

// outageFor is how long the outage of each mode lasts in the tests: long
// enough for several tries, each of a hung call lasting its step's timeout.
func outageFor(mode fakeprovider.OutageMode) time.Duration {
	if mode == fakeprovider.OutageHang {
		return 7 * time.Second
	}
	return 3 * time.Second
}

// A 12-step research on two workers rides out an outage of its provider
// in each of its modes (503, 529, dropped connections, hangs): it ends
// with its report; while the provider is down the run is waiting_provider
// and only the breaker's probes reach it; the ledger still equals the
// bill (a hung call counts at its estimate, unbilled).
func TestResearchRidesOutEachOutage(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	for _, mode := range fakeprovider.OutageModes {
		t.Run(string(mode), func(t *testing.T) {
			// One at a time: the modes share the model's breaker in one database.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r, err := providerbench.OutageResearch(ctx, providerbench.OutageResearchOptions{
				EnvOptions: providerbench.EnvOptions{Pool: pool, Workers: 2, Agent: agentFor(mode)},
				Outage:     providerbench.Outage{Mode: mode, For: outageFor(mode)}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s after %d steps in %s; %s; sample %s", r.Status, r.Steps, r.Elapsed.Round(time.Millisecond), r.Outage, r.Outage.Sample)
			if r.Status != jobs.StatusSucceeded || r.Steps != 12 || !strings.Contains(r.Report, "Sources:") {
				t.Fatalf("%s after %d steps: %q; want the report of 12 steps", r.Status, r.Steps, r.Error)
			}
			if !slices.Contains(r.Outage.States, jobs.StateWaitingProvider) || !strings.Contains(r.Outage.Sample, `"last_error"`) {
				t.Errorf("during the outage: states %v, sample %s; want waiting_provider with the provider's error", r.Outage.States, r.Outage.Sample)
			}
			// Each hung call holds its step for its timeout: fewer tries.
			opened := r.Outage.Probes > 0 || mode == fakeprovider.OutageHang
			if bound := int64(jobs.BreakerThresholdDefault) + r.Outage.Probes; int64(r.Outage.DuringOutage) > bound || !opened {
				t.Errorf("%d requests while down with %d probes: want at most %d", r.Outage.DuringOutage, r.Outage.Probes, bound)
			}
			if mode != fakeprovider.OutageHang {
				checkLedger(t, r.Provider, r.Ledger)
				return
			}
			if len(r.Ledger.Mismatches) != 0 || r.Ledger.Open != 0 || r.Ledger.Estimated != r.Ledger.EstimatedUnbilled {
				t.Errorf("ledger %+v: want the hung calls at their estimate, unbilled, the rest as billed", r.Ledger)
			}
		})
	}
}

// Trees against a rate limit, on two workers, meet an outage in the
// middle: every run succeeds, and after the recovery the limiter lets the
// backlog through at its pace (no burst of 429s); the ledger equals the bill.
func TestTreesRideOutAnOutageAtTheLimitersPace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r, err := providerbench.OutageTrees(ctx, providerbench.OutageTreesOptions{
		RateOptions: providerbench.RateOptions{EnvOptions: providerbench.EnvOptions{Pool: dbtest.NewPool(t), Workers: 2,
			Agent: quickAgent}, Trees: 6, RPM: 60},
		Outage: providerbench.Outage{For: 4 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d runs succeeded in %s; %s", r.Succeeded, r.Runs, r.Elapsed.Round(time.Second), r.Outage)
	if r.Succeeded != r.Runs || r.Runs != 6*(1+providerbench.SubagentsPerTree) {
		t.Errorf("%d of %d runs succeeded: %v", r.Succeeded, r.Runs, r.Errors)
	}
	if r.Outage.Share429 > 0.05 {
		t.Errorf("%d of %d requests after the outage refused with 429, over 5%%", r.Outage.Refused429, r.Outage.After)
	}
	checkLedger(t, r.Provider, r.Ledger)
}
