package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// quickOutage waits out an outage in milliseconds rather than minutes.
var quickOutage = jobs.OutageConfig{BackoffBase: 10 * time.Millisecond, BackoffCap: 100 * time.Millisecond, Threshold: 3}

// quickConfig is an agent's configuration with quickOutage, whose
// maintenance pass makes snoozed steps due at once.
var quickConfig = jobs.Config{Outage: quickOutage, MaintainInterval: 20 * time.Millisecond}

// downModel is a provider that fails every call with a 503 while down is
// set, and answers a report otherwise; it counts the calls it failed.
type downModel struct {
	down   atomic.Bool
	failed atomic.Int64
}

func (m *downModel) model() *scriptModel {
	return &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		if m.down.Load() {
			m.failed.Add(1)
			return llm.Message{}, &llm.CallError{Err: fmt.Errorf("openai script: %w: 503 Service Unavailable", llm.ErrTransient),
				Sent: true}
		}
		return llm.Message{Content: "report of " + topic(req)}, nil
	}}
}

// waitRunState polls a run until cond holds, or fails the test.
func waitRunState(t *testing.T, pool *pgxpool.Pool, id int64, what string, cond func(*jobs.Run) bool) *jobs.Run {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		run, err := jobs.GetRun(context.Background(), pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(run) {
			return run
		}
		if run.Ended() || time.Now().After(deadline) {
			t.Fatalf("run %d: %s %s %q, never %s", id, run.Status, run.State, run.Error, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// downResearch starts a research on a working agent whose provider is
// down until the test brings it back (m.down).
func downResearch(t *testing.T) (*downModel, *testBundle, *jobs.Run) {
	t.Helper()
	m := &downModel{}
	m.down.Store(true)
	b := setup(t, setupOpts{model: m.model(), config: quickConfig})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "tides"})
	if err != nil {
		t.Fatal(err)
	}
	return m, b, run
}

// A provider down for more failures than a step has attempts is waited
// out: the run shows waiting_provider with the provider's last error and
// its next try, says so once on its timeline, and ends with its report
// when the provider is back; the breaker closes again.
func TestOutageIsWaitedOutWithoutSpendingAttempts(t *testing.T) {
	t.Parallel()
	m, b, run := downResearch(t)
	ctx := context.Background()
	waiting := waitRunState(t, b.pool, run.ID, "waiting for its provider past its attempts", func(r *jobs.Run) bool {
		return r.State == jobs.StateWaitingProvider && r.ProviderWait != nil && r.ProviderWait.Tries > jobs.StepMaxAttempts+1
	})
	w := waiting.ProviderWait
	if !strings.Contains(w.LastError, "503") || !strings.Contains(w.FirstError, "503") || w.Model != "script" ||
		w.NextTry.Before(w.Since) || waiting.Status != jobs.StatusQueued {
		t.Errorf("while waiting: %s %+v; want it queued (no step made yet), the 503 and a next try", waiting.Status, w)
	}
	br, err := jobs.Breakers(ctx, b.pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(br) != 1 || br[0].State == jobs.BreakerClosed || br[0].Waiting != 1 || br[0].Failures < quickOutage.Threshold {
		t.Errorf("breakers during the outage %+v: want script's open, with one run waiting", br)
	}
	m.down.Store(false)
	done := waitEnded(t, b.pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Report != "report of tides" || done.ProviderWait != nil {
		t.Fatalf("%s %q %q wait %+v: want the report, the wait over", done.Status, done.Report, done.Error, done.ProviderWait)
	}
	if n := countEvents(t, b.pool, run.ID, jobs.EventWaitingProvider); n != 1 {
		t.Errorf("%d waiting_provider events, want 1 for the outage", n)
	}
	if n := countEvents(t, b.pool, run.ID, jobs.EventProviderRecovered); n != 1 {
		t.Errorf("%d provider_recovered events, want 1", n)
	}
	if br, err = jobs.Breakers(ctx, b.pool); err != nil || br[0].State != jobs.BreakerClosed || br[0].Failures != 0 ||
		br[0].ClosedAt == nil {
		t.Errorf("breakers after the outage %+v (%v): want closed", br, err)
	}
	states, err := jobs.States(ctx, b.pool, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var entered int
	for _, s := range states {
		if s.State == jobs.StateWaitingProvider {
			entered++
		}
	}
	if entered != 1 {
		t.Errorf("states %+v: want waiting_provider entered once, not at every try", states)
	}
}

// While a model's breaker is open, of the steps of many runs on two
// workers only probes reach the provider: every failure beyond those the
// breaker counted before it opened (one in flight per run at most) is a
// probe, and all the runs succeed when it is back.
func TestOpenBreakerLetsOnlyProbesOut(t *testing.T) {
	t.Parallel()
	m := &downModel{}
	model := m.model()
	pool := dbtest.NewPool(t)
	b := setupOn(t, pool, setupOpts{model: model, config: quickConfig})
	second := setupOn(t, pool, setupOpts{model: model, config: quickConfig}) // another worker
	_ = second
	ctx := context.Background()
	const runs = 6
	m.down.Store(true)
	var ids []int64
	for i := range runs {
		user := newUser(t, pool, fmt.Sprintf("outage%d", i))
		run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: user, Topic: fmt.Sprintf("topic %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	for _, id := range ids {
		waitRunState(t, pool, id, "waiting for its provider", func(r *jobs.Run) bool { return r.State == jobs.StateWaitingProvider })
	}
	// Let the breaker probe for a while: many tries of every run.
	waitRunState(t, pool, ids[0], "waiting long", func(r *jobs.Run) bool {
		return r.ProviderWait != nil && time.Since(r.ProviderWait.Since) > 20*quickOutage.BackoffCap
	})
	m.down.Store(false)
	for _, id := range ids {
		if done := waitEnded(t, pool, id, 30*time.Second); done.Status != jobs.StatusSucceeded || done.Report == "" {
			t.Errorf("run %d: %s %q, want its report", id, done.Status, done.Error)
		}
	}
	br, err := jobs.Breakers(ctx, pool)
	if err != nil || len(br) != 1 {
		t.Fatalf("breakers %+v: %v", br, err)
	}
	failed := m.failed.Load()
	if bound := int64(quickOutage.Threshold-1+runs) + br[0].Probes; failed > bound || br[0].Probes == 0 {
		t.Errorf("%d calls failed with %d probes: want at most %d (before it opened, one per run in flight, and the probes)",
			failed, br[0].Probes, bound)
	}
	t.Logf("%d calls failed over the outage, %d of them probes", failed, br[0].Probes)
}

// Of calls that race for an open breaker's probe, one gets it; a failed
// probe puts the next one later; once the lease of a probe that never came
// back runs out, another may probe.
func TestBreakerProbeIsClaimedOnce(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	ctx := context.Background()
	cfg := jobs.OutageConfig{BackoffBase: time.Millisecond, BackoffCap: time.Millisecond, Threshold: 2, ProbeLease: 500 * time.Millisecond}
	for range 2 {
		if err := jobs.BreakerFailedForTest(ctx, pool, cfg, "m", "503"); err != nil {
			t.Fatal(err)
		}
	}
	waitBreaker(t, pool, "open and due", func(b jobs.Breaker) bool {
		return b.State == jobs.BreakerOpen && b.NextProbe != nil && time.Now().After(*b.NextProbe)
	})
	var probes atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			probe, err := jobs.BreakerGateForTest(ctx, pool, cfg, "m")
			if err != nil {
				t.Error(err)
			}
			if probe {
				probes.Add(1)
			}
		})
	}
	wg.Wait()
	if probes.Load() != 1 {
		t.Fatalf("%d of 16 racing calls got the probe, want 1", probes.Load())
	}
	// The prober never comes back: its lease runs out, and one more may probe.
	waitBreaker(t, pool, "the lease run out", func(b jobs.Breaker) bool { return b.State == jobs.BreakerOpen })
	if probe, err := jobs.BreakerGateForTest(ctx, pool, cfg, "m"); err != nil || !probe {
		t.Fatalf("after the lease: probe %v, %v; want a new probe", probe, err)
	}
}

// waitBreaker polls model m's breaker until cond holds.
func waitBreaker(t *testing.T, pool *pgxpool.Pool, what string, cond func(jobs.Breaker) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		br, err := jobs.Breakers(context.Background(), pool)
		if err != nil {
			t.Fatal(err)
		}
		if len(br) == 1 && cond(br[0]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("breakers %+v: never %s", br, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An outage longer than the horizon ends the run with an error that names
// it, counted from the outage's first failure even when another worker
// took the run over meanwhile.
func TestOutagePastTheHorizonEndsTheRunNamingIt(t *testing.T) {
	t.Parallel()
	m := &downModel{}
	m.down.Store(true)
	pool := dbtest.NewPool(t)
	cfg := quickConfig
	cfg.Outage.Horizon = 2 * time.Second
	first := setupOn(t, pool, setupOpts{model: m.model(), config: cfg})
	ctx := context.Background()
	run, _, err := first.agent.StartResearch(ctx, jobs.StartParams{UserID: first.userID, Topic: "tides"})
	if err != nil {
		t.Fatal(err)
	}
	seen := waitRunState(t, pool, run.ID, "waiting", func(r *jobs.Run) bool { return r.ProviderWait != nil })
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := first.agent.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	w, err := jobs.New(jobs.Deps{Pool: pool, Model: m.model(), Work: true, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	done := waitEnded(t, pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusFailed || !strings.Contains(done.Error, "provider outage") ||
		!strings.Contains(done.Error, "GB_OUTAGE_HORIZON") || !strings.Contains(done.Error, "503") ||
		!strings.Contains(done.Error, "model script") {
		t.Fatalf("%s %q: want it failed naming the outage", done.Status, done.Error)
	}
	if done.ProviderWait == nil || !done.ProviderWait.Since.Equal(seen.ProviderWait.Since) {
		t.Errorf("the outage began %v as the run ended, %v as the first worker saw it: want the same", done.ProviderWait, seen.ProviderWait.Since)
	}
	if waited := done.EndedAt.Sub(seen.ProviderWait.Since); waited < cfg.Outage.Horizon {
		t.Errorf("ended %s after the first failure, want at least the horizon %s", waited, cfg.Outage.Horizon)
	}
}

// The breaker's openings, probes and closing are counted by the metric
// gb.provider.breaker, by model.
func TestBreakerIsMetered(t *testing.T) {
	t.Parallel()
	m := &downModel{}
	m.down.Store(true)
	pool := dbtest.NewPool(t)
	b := setupOn(t, pool, setupOpts{model: m.model(), noWork: true})
	reader := sdkmetric.NewManualReader()
	w, err := jobs.New(jobs.Deps{Pool: pool, Model: m.model(), Work: true, Config: quickConfig,
		Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "tides"})
	if err != nil {
		t.Fatal(err)
	}
	waitRunState(t, pool, run.ID, "probing", func(r *jobs.Run) bool {
		return r.ProviderWait != nil && r.ProviderWait.Tries > quickOutage.Threshold+1
	})
	m.down.Store(false)
	if done := waitEnded(t, pool, run.ID, 30*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != "gb.provider.breaker" {
				continue
			}
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				ev, _ := dp.Attributes.Value("gb.breaker.event")
				got[ev.AsString()] += dp.Value
			}
		}
	}
	if got["opened"] != 1 || got["probe"] < 1 || got["closed"] != 1 {
		t.Errorf("gb.provider.breaker %v: want it opened once, probed and closed once", got)
	}
}

// When a breaker closes, the snoozed steps of the runs waiting for its
// model are made due at their trees' starts, so that River takes the
// oldest tree's first; other runs' steps keep their time.
func TestClosingBreakerWakesWaitersInTreeOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	var ids []int64
	for i := range 3 {
		user := newUser(t, b.pool, fmt.Sprintf("wake%d", i))
		run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: user, Topic: fmt.Sprintf("topic %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	// The first two wait for model m, snoozed an hour; the third waits for
	// nothing, snoozed too.
	if _, err := b.pool.Exec(ctx, `UPDATE gb_agent_research_runs SET state = 'waiting_provider',
		provider_wait = '{"model":"m"}' WHERE id = ANY($1)`, ids[:2]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE river_job SET state = 'scheduled', scheduled_at = now() + interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	n, err := jobs.WakeProviderWaitsForTest(ctx, b.pool, "m")
	if err != nil || n != 2 {
		t.Fatalf("woke %d (%v), want the 2 steps waiting for m", n, err)
	}
	rows, err := b.pool.Query(ctx, `SELECT (j.args->>'run_id')::bigint, j.scheduled_at <= now(), j.scheduled_at = r.tree_started_at
		FROM river_job j JOIN gb_agent_research_runs r ON r.id = (j.args->>'run_id')::bigint ORDER BY j.scheduled_at, j.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var order []int64
	for rows.Next() {
		var id int64
		var due, atTree bool
		if err := rows.Scan(&id, &due, &atTree); err != nil {
			t.Fatal(err)
		}
		order = append(order, id)
		if waits := id != ids[2]; due != waits || (waits && !atTree) {
			t.Errorf("run %d: due %v at its tree's start %v", id, due, atTree)
		}
	}
	if len(order) != 3 || order[0] != ids[0] || order[1] != ids[1] || order[2] != ids[2] {
		t.Errorf("queue order %v, want %v: the waiting steps by tree age, then the one still snoozed", order, ids)
	}
}

// A run's own wall clock still applies while it waits for its provider:
// past its deadline it ends timed_out, not after the outage horizon.
func TestWallClockEndsARunWaitingForItsProvider(t *testing.T) {
	t.Parallel()
	_, b, run := downResearch(t)
	ctx := context.Background()
	waitRunState(t, b.pool, run.ID, "waiting", func(r *jobs.Run) bool { return r.State == jobs.StateWaitingProvider })
	// The cap of a sub-agent's type, given to this run.
	if _, err := b.pool.Exec(ctx, `UPDATE gb_agent_research_runs SET deadline = now() + interval '1 second' WHERE id = $1`,
		run.ID); err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, run.ID, 30*time.Second); done.Status != jobs.StatusTimedOut {
		t.Fatalf("%s %q: want it timed out at its wall-clock cap", done.Status, done.Error)
	}
}
