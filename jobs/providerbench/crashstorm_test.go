package providerbench_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// TestCrashStorm is the crash storm, opt in with GB_BENCH_CRASHSTORM=1
// (some 3 to 4 minutes with the build): two `gb worker` processes on one
// database, the fake provider answering in 300 ms to 1.5 s, six trees of a
// root and three sub-agents started 15 s apart, and eight SIGKILLs in two
// minutes. Every run succeeds, no root succeeds with a blank report, and
// the ledger holds each call the provider billed exactly once, with the
// provider's tokens for every call it settled from an answer.
//
// GB_BENCH_CRASHSTORM_KILLS and GB_BENCH_CRASHSTORM_OVER (a duration)
// change the kill rate, GB_BENCH_CRASHSTORM_STAGGER the time between two
// trees' starts: GB_BENCH_CRASHSTORM_KILLS=24 GB_BENCH_CRASHSTORM_STAGGER=1ms
// (the trees at once, a kill every 5 s) is a storm in which a step job that
// spends an attempt at each kill runs out of them.
func TestCrashStorm(t *testing.T) {
	if os.Getenv("GB_BENCH_CRASHSTORM") != "1" {
		t.Skip("a benchmark of some 2 to 3 minutes: set GB_BENCH_CRASHSTORM=1 to run it")
	}
	o := providerbench.StormOptions{URL: dbtest.NewURL(t), Bin: buildGB(t),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if v := os.Getenv("GB_BENCH_CRASHSTORM_KILLS"); v != "" {
		if _, err := fmt.Sscan(v, &o.Kills); err != nil {
			t.Fatalf("GB_BENCH_CRASHSTORM_KILLS=%q: %v", v, err)
		}
	}
	o.Over = envDuration(t, "GB_BENCH_CRASHSTORM_OVER")
	o.Stagger = envDuration(t, "GB_BENCH_CRASHSTORM_STAGGER")
	r, err := providerbench.CrashStorm(context.Background(), o)
	for _, u := range r.Unexpected {
		t.Errorf("a worker died unasked: %s", u)
	}
	if err != nil {
		t.Fatal(err)
	}
	j, l, p := r.Jobs, r.Ledger, r.Provider
	t.Logf("%d kills; every tree ended %s after the start; %d of %d runs succeeded, %d roots succeeded with a blank report",
		r.Kills, r.Took.Round(time.Millisecond), r.Succeeded, r.Runs, r.EmptyRoots)
	t.Logf("step jobs: %d, fetched %d times, %d attempts spent (%d given back), highest attempt %d; %d rescues, "+
		"a job rescued at most %d times, a step at most %d (gb:rescues); %d discarded", j.Jobs, j.Fetches, j.Attempts,
		j.GivenBack(), j.AttemptMax, j.Rescues, j.JobRescuesMax, j.StepRescuesMax, j.Discarded)
	t.Logf("provider: %d requests, %d billed, %d+%d tokens (%d cached), $%.6f; ledger: %d settled (%d at their estimate, "+
		"%d of them never billed), %d+%d tokens (%d cached), $%.6f, %d open",
		p.Requests, p.Billed, p.PromptTokens, p.CompletionTokens, p.CachedTokens, p.CostUSD, l.Billed, l.Estimated,
		l.EstimatedUnbilled, l.PromptTokens, l.CompletionTokens, l.CachedTokens, l.CostUSD, l.Open)
	tk := r.Tokens
	t.Logf("tokens: %d calls settled from their answer, billed %d, ledger %d; %d calls cut off by a kill and "+
		"settled at their estimate, billed %d, ledger %d", tk.Answered, tk.AnsweredBilled, tk.AnsweredLedger,
		tk.AtEstimate, tk.EstimateBilled, tk.EstimateLedger)
	if tk.AnsweredBilled != tk.AnsweredLedger {
		t.Errorf("the ledger holds %d tokens for the answered calls, the provider billed %d", tk.AnsweredLedger, tk.AnsweredBilled)
	}
	for _, e := range r.Errors {
		t.Errorf("run %s", e)
	}
	if r.Succeeded != r.Runs || r.Runs != 24 {
		t.Errorf("%d of %d runs succeeded, of the 24 the trees have", r.Succeeded, r.Runs)
	}
	if r.EmptyRoots != 0 {
		t.Errorf("%d roots succeeded with a blank report", r.EmptyRoots)
	}
	// A faster storm may outlast the trees; eight kills must land on work.
	if want := min(cmp.Or(o.Kills, 8), 8); r.Kills < want {
		t.Errorf("%d kills landed before the trees ended; the storm needs %d", r.Kills, want)
	}
	for _, m := range l.Mismatches {
		t.Errorf("ledger: %s", m)
	}
	if l.Open != 0 || l.Billed-l.EstimatedUnbilled != p.Billed {
		t.Errorf("the ledger counts %d billed calls (%d never billed, %d open), the provider %d", l.Billed,
			l.EstimatedUnbilled, l.Open, p.Billed)
	}
}

// envDuration is the duration the environment variable says, or 0.
func envDuration(t *testing.T, name string) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

// buildGB builds the gb binary the workers run.
func buildGB(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gb")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/gbresearch/gb/cmd/gb").CombinedOutput()
	if err != nil {
		t.Fatalf("building gb: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	return bin
}
