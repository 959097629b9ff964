package jobs

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/llm"
)

// limitsOf reads the limits in force of a key (0: none).
func limitsOf(t *testing.T, pool *pgxpool.Pool, key string) (rpm, tpm int, configured bool) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `SELECT coalesce(rpm, 0), coalesce(tpm, 0), configured
		FROM gb_rate_limits WHERE key = $1`, key).Scan(&rpm, &tpm, &configured)
	if err != nil {
		t.Fatal(err)
	}
	return rpm, tpm, configured
}

// The lower of the configured limit and the provider's headers governs; a
// configuration left unchanged keeps what the headers lowered it to, a
// changed one takes its new figure, and a configuration removed leaves the
// provider's headers alone in force.
func TestConfiguredAndProviderLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	log := slog.New(slog.DiscardHandler)
	observe := func(l *limiter, rpm, tpm int) {
		t.Helper()
		l.observed = map[string]time.Time{}
		rl := &llm.RateLimits{LimitRequests: rpm, RemainingRequests: rpm, LimitTokens: tpm, RemainingTokens: tpm}
		if err := l.observe(ctx, pool, log, "m", rl, 0); err != nil {
			t.Fatal(err)
		}
	}
	want := func(step string, rpm, tpm int, configured bool) {
		t.Helper()
		if r, k, c := limitsOf(t, pool, "m"); r != rpm || k != tpm || c != configured {
			t.Errorf("%s: rpm %d tpm %d configured %t; want %d %d %t", step, r, k, c, rpm, tpm, configured)
		}
	}
	l := newLimiter(map[string]RateLimit{"m": {RPM: 60, TPM: 6000}})
	if err := l.sync(ctx, pool); err != nil {
		t.Fatal(err)
	}
	want("configured", 60, 6000, true)
	observe(l, 30, 100_000)
	want("headers lower in RPM, higher in TPM", 30, 6000, true)
	if !l.lowered["m"] {
		t.Error("the lower limit in the headers was not noted")
	}
	if err := newLimiter(map[string]RateLimit{"m": {RPM: 60, TPM: 6000}}).sync(ctx, pool); err != nil {
		t.Fatal(err)
	}
	want("same configuration synced again", 30, 6000, true)
	if err := newLimiter(map[string]RateLimit{"m": {RPM: 90, TPM: 6000}}).sync(ctx, pool); err != nil {
		t.Fatal(err)
	}
	want("configuration raised", 90, 6000, true)
	free := newLimiter(nil)
	if err := free.sync(ctx, pool); err != nil {
		t.Fatal(err)
	}
	want("configuration removed", 0, 0, false)
	observe(free, 500, 200_000)
	want("headers after the configuration was removed", 500, 200_000, false)
}

// A context_length_exceeded refusal teaches the window it names, or a
// shrink of the window in force, or the refused request's size when that
// is smaller; it never teaches a window larger than the one in force, nor
// one under the floor unless named.
func TestNextWindow(t *testing.T) {
	openai := "This model's maximum context length is 16384 tokens. However, you requested 20000 tokens."
	for _, c := range []struct {
		msg              string
		inForce, refused int
		want             int
	}{
		{openai, 128_000, 20_000, 16_384},
		{openai, 16_384, 20_000, 0},
		{openai, 0, 20_000, 16_384},
		{"prompt is too long: 210000 tokens > 200000 maximum", 1_000_000, 210_000, 200_000},
		{"the context window of 8,192 tokens was exceeded", 32_000, 9000, 8192},
		{"Input is too long for requested model.", 300_000, 400_000, 225_000},
		{"Input is too long for requested model.", 128_000, 20_000, 20_000},
		{"Input is too long for requested model.", 128_000, 3000, 96_000},
		{"Input is too long for requested model.", 0, 40_000, 40_000},
		{"Input is too long for requested model.", 9000, 1000, 0},
	} {
		if got, _ := nextWindow(c.msg, c.inForce, c.refused); got != c.want {
			t.Errorf("nextWindow(%q, %d, %d) = %d, want %d", c.msg, c.inForce, c.refused, got, c.want)
		}
	}
}

// A learned window is kept for every worker, and only a smaller one
// replaces it; the TPM in force is read beside it.
func TestLearnedWindowIsShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	a := &Service{pool: pool, logger: slog.New(slog.DiscardHandler)}
	refusal := func(n int) error {
		return &llm.CallError{Err: errors.Join(llm.ErrContextLength,
			errors.New("This model's maximum context length is "+strconv.Itoa(n)+" tokens."))}
	}
	if got, named, err := a.learnWindow(ctx, "m", refusal(16_000), 128_000, 20_000); err != nil || got != 16_000 || !named {
		t.Fatalf("learned %d (named %t, %v), want 16000 named", got, named, err)
	}
	if got, _, err := a.learnWindow(ctx, "m", refusal(20_000), 128_000, 30_000); err != nil || got != 0 {
		t.Errorf("a larger window replaced a smaller one: %d (%v)", got, err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO gb_rate_limits (key, tpm) VALUES ('m', 12000)`); err != nil {
		t.Fatal(err)
	}
	other := &Service{pool: pool, logger: a.logger} // another worker
	lim, err := other.providerLimits(ctx, "m")
	if err != nil || lim.window != 16_000 || lim.tpm != 12_000 {
		t.Fatalf("limits %+v (%v), want window 16000 and TPM 12000", lim, err)
	}
	if w := lim.effectiveWindow(128_000); w != 16_000 {
		t.Errorf("effective window %d, want the learned 16000", w)
	}
	if w := lim.effectiveWindow(8_000); w != 8_000 {
		t.Errorf("effective window %d, want the profile's smaller 8000", w)
	}
}

// The completion cap doubles after unusable answers but never passes the
// model's output limit, half the window or half the TPM.
func TestCompletionCapStaysWithinTheModelsLimits(t *testing.T) {
	nova := llm.Profile{StepCap: 1024, ReportCap: 4096, MaxCompletion: 5000}
	for _, c := range []struct {
		p                 llm.Profile
		last              bool
		unusable          int
		window, tpm, want int
	}{
		{nova, false, 0, 300_000, 0, 1024},
		{nova, false, 3, 300_000, 0, 5000},
		{nova, true, 1, 300_000, 0, 5000},
		{llm.Profile{StepCap: 1024, ReportCap: 4096}, true, 3, 128_000, 0, 16_384},
		{nova, true, 0, 6000, 0, 3000},
		{nova, true, 0, 300_000, 4000, 2000},
	} {
		got := completionCap(c.p, c.last, c.unusable, 16_384, c.window, c.tpm)
		if got != c.want {
			t.Errorf("completionCap(%+v, last %t, unusable %d, window %d, tpm %d) = %d, want %d",
				c.p, c.last, c.unusable, c.window, c.tpm, got, c.want)
		}
	}
}

// Compaction aims at the smaller of the window and the TPM.
func TestCompactionWindowIsTheSmallerOfWindowAndTPM(t *testing.T) {
	for _, c := range []struct{ window, tpm, want int }{
		{128_000, 12_000, 12_000}, {16_000, 0, 16_000}, {0, 12_000, 12_000}, {8_000, 12_000, 8_000}, {0, 0, 0},
	} {
		if got := compactionWindow(c.window, c.tpm); got != c.want {
			t.Errorf("compactionWindow(%d, %d) = %d, want %d", c.window, c.tpm, got, c.want)
		}
	}
}

// A model whose output burns the quota five times over is charged five
// tokens of the TPM for each token of its completion cap, its cap is held
// to a tenth of the TPM, and its prompt is left the rest.
func TestOutputBurndownCountsAgainstTheQuota(t *testing.T) {
	claude4 := &burnModel{p: llm.Profile{StepCap: 1024, ReportCap: 4096, MaxCompletion: 64_000, OutputBurndown: 5}}
	if _, n := newLimiter(nil).cost(claude4, llm.Usage{PromptTokens: 1000, CompletionTokens: 200}); n != 2000 {
		t.Errorf("cost %d, want 1000 + 5×200", n)
	}
	if c := completionCap(claude4.p, true, 0, 16_384, 200_000, 40_000); c != 4000 {
		t.Errorf("report cap %d under a 40k TPM at 5×, want 4000", c)
	}
	if r := quotaRoom(40_000, claude4.p, 4000); r != 24_000 {
		t.Errorf("room %d, want 40000 - 4×4000", r)
	}
	if r := quotaRoom(40_000, llm.Profile{}, 4000); r != 40_000 {
		t.Errorf("room %d at 1×, want the TPM", r)
	}
}

// burnModel is a model with a profile and nothing else.
type burnModel struct{ p llm.Profile }

func (m *burnModel) Name() string         { return "burn" }
func (m *burnModel) Profile() llm.Profile { return m.p }
func (m *burnModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, errors.New("not called")
}
