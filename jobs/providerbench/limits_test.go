package providerbench_test

import (
	"context"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// checkWindow fails unless a research against a window smaller than gb
// was told succeeded, learned the window, and was refused in at most a
// tenth of its paid calls.
func checkWindow(t testing.TB, r providerbench.WindowResult, steps, window int) {
	t.Helper()
	if r.Status != "succeeded" || r.Steps != steps {
		t.Errorf("%s after %d steps (%s); want succeeded after %d", r.Status, r.Steps, r.Error, steps)
	}
	if r.Learned == 0 || r.Learned > window {
		t.Errorf("learned window %d; want at most the provider's %d", r.Learned, window)
	}
	if r.Refused*10 > r.Paid {
		t.Errorf("%d requests refused for %d paid, more than 10%%", r.Refused, r.Paid)
	}
	if r.MaxRequest > window {
		t.Errorf("a request of %d tokens was answered over the window of %d", r.MaxRequest, window)
	}
}

// A research that keeps notes, on two workers, against a provider whose
// window is 16,000 tokens while gb's profile says 128,000: the window is
// learned from the first refusal and kept for both workers.
func TestSmallWindowIsLearned(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := providerbench.SmallWindow(ctx, providerbench.WindowOptions{
		EnvOptions: providerbench.EnvOptions{Pool: dbtest.NewPool(t), Workers: 2}, Steps: 12})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s after %d steps; %d refused for %d paid; learned %d; largest request %d; %d pages cited",
		r.Status, r.Steps, r.Refused, r.Paid, r.Learned, r.MaxRequest, r.Cited)
	checkWindow(t, r, 12, 16_000)
	checkLedger(t, r.Provider, r.Ledger)
}

// The 40-step research with notes against a 16k window that gb was told is
// 128k (go test -run '^$' -bench 'SmallWindow$' -benchtime 1x ./jobs/providerbench).
func BenchmarkSmallWindow(b *testing.B) {
	pool := dbtest.NewPool(b)
	for b.Loop() {
		r, err := providerbench.SmallWindow(context.Background(), providerbench.WindowOptions{
			EnvOptions: providerbench.EnvOptions{Pool: pool, Workers: 2}})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s after %d steps (%s); %d refused for %d paid (%.1f%%); learned %d; largest request %d; "+
			"report cap %d; %d pages cited; $%.4f", r.Status, r.Steps, r.Error, r.Refused, r.Paid,
			100*float64(r.Refused)/float64(max(r.Paid, 1)), r.Learned, r.MaxRequest, r.ReportCap, r.Cited, r.Provider.CostUSD)
		checkWindow(b, r, 40, 16_000)
		if r.ReportCap >= 4096 {
			b.Errorf("report cap %d: the notes should have left the report less than its 4096", r.ReportCap)
		}
		b.ReportMetric(float64(r.Refused)/float64(max(r.Paid, 1)), "refused/paid")
	}
}

// The same research on Bedrock, whose refusals name no window ("Input is
// too long for requested model."): each shrinks the window in force by a
// quarter (go test -run '^$' -bench SmallWindowBedrock -benchtime 1x
// ./jobs/providerbench).
func BenchmarkSmallWindowBedrock(b *testing.B) {
	pool := dbtest.NewPool(b)
	for b.Loop() {
		r, err := providerbench.SmallWindow(context.Background(), providerbench.WindowOptions{
			EnvOptions: providerbench.EnvOptions{Pool: pool, Workers: 2, ProviderName: providerbench.ProviderBedrock}})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s after %d steps (%s); %d refused for %d paid (%.1f%%); learned %d; largest request %d; "+
			"report cap %d; $%.4f", r.Status, r.Steps, r.Error, r.Refused, r.Paid,
			100*float64(r.Refused)/float64(max(r.Paid, 1)), r.Learned, r.MaxRequest, r.ReportCap, r.Provider.CostUSD)
		checkWindow(b, r, 40, 16_000)
		b.ReportMetric(float64(r.Refused)/float64(max(r.Paid, 1)), "refused/paid")
	}
}

// A research reading 20,000-character pages against a 12k TPM, learned
// from the provider's headers (go test -run '^$' -bench SmallTPM
// -benchtime 1x ./jobs/providerbench).
func BenchmarkSmallTPM(b *testing.B) {
	pool := dbtest.NewPool(b)
	for b.Loop() {
		r, err := providerbench.SmallTPM(context.Background(), providerbench.TPMOptions{
			EnvOptions: providerbench.EnvOptions{Pool: pool}})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s after %d steps (%s); %d too large, %d other 429s, %d paid; largest request %d of the TPM 12000",
			r.Status, r.Steps, r.Error, r.TooLarge, r.Limited, r.Provider.Billed, r.MaxRequest)
		if r.Status != "succeeded" || r.TooLarge != 0 || r.MaxRequest > 12_000 {
			b.Errorf("%s, %d too large, largest request %d", r.Status, r.TooLarge, r.MaxRequest)
		}
		if len(r.Ledger.Mismatches) != 0 || r.Ledger.Billed != r.Provider.Billed {
			b.Errorf("ledger %+v; the provider billed %d", r.Ledger, r.Provider.Billed)
		}
	}
}

// Trees against a provider's RPM after the configured limit, a third of
// it, was removed: the provider's headers govern (go test -run '^$'
// -bench StaleLimit -benchtime 1x ./jobs/providerbench).
func BenchmarkStaleLimit(b *testing.B) {
	pool := dbtest.NewPool(b)
	for b.Loop() {
		r, err := providerbench.StaleLimit(context.Background(), providerbench.StaleOptions{
			RateOptions: providerbench.RateOptions{EnvOptions: providerbench.EnvOptions{Pool: pool, Workers: 2},
				Trees: 20, RPM: 120}})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%d of %d runs succeeded in %s; %d calls billed, %d refused (%.1f%%); throughput %.0f%% of the "+
			"provider's %s", r.Succeeded, r.Runs, r.Elapsed.Round(time.Second), r.Provider.Billed, r.Refused,
			100*r.Share, 100*r.Throughput, r.Binding)
		if r.Succeeded != r.Runs || r.Throughput < 0.85 {
			b.Errorf("%d of %d succeeded, throughput %.2f; want all, at least 0.85 (errors %v)", r.Succeeded, r.Runs,
				r.Throughput, r.Errors)
		}
		b.ReportMetric(r.Throughput, "share_of_rpm")
	}
}
