package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file shares a provider's capacity among every worker. The limits
// of a model (requests and tokens per minute) live in one row of
// gb_rate_limits, configured (Config.RateLimits) or learned from the
// provider's x-ratelimit-* headers, the lower of the two governing (a
// limit no longer configured is gone, and the headers govern alone); every call takes its capacity there
// (gb_take_capacity, in admitCallSQL) before it is made, and a call that
// must wait goes back to the queue until its capacity's time instead of
// sleeping in its worker slot. What the provider says after each call
// (what is left, a 429's retry-after) moves the row's clock forward when
// the provider counted more than gb did.

// RateLimit is a provider's limit of one model, per minute; zero means
// none.
type RateLimit struct {
	RPM int `json:"rpm"`
	TPM int `json:"tpm"`
}

// limiter is a process's side of the shared rate limits: the configured
// limits, and how far its prompt estimates fall short of what the
// provider counts, by model.
type limiter struct {
	configured map[string]RateLimit

	mu       sync.Mutex
	ratio    map[string]float64   // provider's prompt tokens / the estimate, at least 1
	observed map[string]time.Time // when the provider's word was last written, by model
	lowered  map[string]bool      // models whose headers named a limit under the configured one
}

func newLimiter(configured map[string]RateLimit) *limiter {
	return &limiter{configured: configured, ratio: map[string]float64{}, observed: map[string]time.Time{},
		lowered: map[string]bool{}}
}

// noteLower logs, once a process, that a provider's headers name a limit
// under the configured one for a model: the lower one governs.
func (l *limiter) noteLower(ctx context.Context, logger *slog.Logger, model string, rl llm.RateLimits) {
	c, ok := l.configured[model]
	if !ok {
		return
	}
	rpmLower := c.RPM > 0 && rl.LimitRequests > 0 && rl.LimitRequests < c.RPM
	tpmLower := c.TPM > 0 && rl.LimitTokens > 0 && rl.LimitTokens < c.TPM
	if !rpmLower && !tpmLower {
		return
	}
	l.mu.Lock()
	seen := l.lowered[model]
	l.lowered[model] = true
	l.mu.Unlock()
	if !seen {
		logger.WarnContext(ctx, "the provider's rate limits are lower than configured (GB_RATE_LIMITS); the provider's govern",
			slog.String("model", model), slog.Int("configured_rpm", c.RPM), slog.Int("provider_rpm", rl.LimitRequests),
			slog.Int("configured_tpm", c.TPM), slog.Int("provider_tpm", rl.LimitTokens))
	}
}

// coldRatio is how many tokens a provider is taken to count for each of
// gb's own before it has said (tool schemas, dense in punctuation, count
// half again as many in OpenAI's tokenizers as in a four-bytes estimate).
const coldRatio = 1.25

// cost is the rate key of a model's call and the tokens its limit counts:
// the prompt, as the provider is likely to count it (est is scaled
// already), and the completion cap, as providers count them before a
// call, at the model's output burndown rate (Bedrock takes five tokens of
// the quota for each output token of Claude 3.7 Sonnet and Claude 4).
func (l *limiter) cost(m llm.Model, est llm.Usage) (string, int) {
	return m.Name(), est.PromptTokens + est.CompletionTokens*max(profileOf(m).OutputBurndown, 1)
}

// scale is a prompt estimate corrected by what the provider counted before
// (coldRatio until it has answered once).
func (l *limiter) scale(model string, promptTokens int) int {
	l.mu.Lock()
	r, ok := l.ratio[model]
	l.mu.Unlock()
	if !ok {
		r = coldRatio
	}
	return int(math.Ceil(float64(promptTokens) * max(r, 1)))
}

// learn notes how many prompt tokens the provider counted for an estimate.
func (l *limiter) learn(model string, estimated, counted int) {
	if estimated <= 0 || counted <= 0 {
		return
	}
	r := float64(counted) / float64(estimated)
	l.mu.Lock()
	defer l.mu.Unlock()
	old, ok := l.ratio[model]
	if !ok {
		old = r
	}
	l.ratio[model] = 0.8*old + 0.2*r
}

// syncLimitsSQL writes the configured limits ($1 keys, $2 rpm, $3 tpm, 0
// for none): a limit whose configuration is unchanged keeps what the
// provider's headers lowered it to, a changed one takes the new figure, and
// a key configured before but no longer loses its configured limits, so
// that the provider's headers govern it from its next call.
const syncLimitsSQL = `WITH cfg AS (
		SELECT k, nullif(r, 0) AS r, nullif(t, 0) AS t FROM unnest($1::text[], $2::int[], $3::int[]) AS u(k, r, t)),
	gone AS (
		UPDATE gb_rate_limits SET configured = false,
			rpm = CASE WHEN cfg_rpm IS NULL THEN rpm END, tpm = CASE WHEN cfg_tpm IS NULL THEN tpm END,
			cfg_rpm = NULL, cfg_tpm = NULL, updated_at = now()
		WHERE configured AND key NOT IN (SELECT k FROM cfg))
	INSERT INTO gb_rate_limits AS l (key, rpm, tpm, cfg_rpm, cfg_tpm, configured)
	SELECT k, r, t, r, t, true FROM cfg
	ON CONFLICT (key) DO UPDATE SET configured = true,
		rpm = CASE WHEN l.cfg_rpm IS NOT DISTINCT FROM excluded.cfg_rpm THEN least(l.rpm, excluded.cfg_rpm) ELSE excluded.cfg_rpm END,
		tpm = CASE WHEN l.cfg_tpm IS NOT DISTINCT FROM excluded.cfg_tpm THEN least(l.tpm, excluded.cfg_tpm) ELSE excluded.cfg_tpm END,
		cfg_rpm = excluded.cfg_rpm, cfg_tpm = excluded.cfg_tpm, updated_at = now()`

// sync writes the configured limits to the shared table, and takes away
// the configured limits of keys no longer configured.
func (l *limiter) sync(ctx context.Context, db DB) error {
	keys := []string{}
	var rpm, tpm []int32
	for k, v := range l.configured {
		keys, rpm, tpm = append(keys, k), append(rpm, int32(v.RPM)), append(tpm, int32(v.TPM))
	}
	if _, err := db.Exec(ctx, syncLimitsSQL, keys, rpm, tpm); err != nil {
		return fmt.Errorf("error writing the rate limits: %w", err)
	}
	return nil
}

// observeLimitsSQL writes what a provider said of a model's limits: the
// limits themselves, never above a configured one (a limit the provider
// names no longer, when it names another, is gone, or back to the
// configured one), the clocks of its buckets as the provider's remaining
// capacity puts them ($4, $5), and a hold on every call until $6 after a
// 429.
const observeLimitsSQL = `INSERT INTO gb_rate_limits AS r (key, rpm, tpm, req_tat, tok_tat, blocked_until)
	VALUES ($1, nullif($2, 0), nullif($3, 0), $4, $5, $6)
	ON CONFLICT (key) DO UPDATE SET
		rpm = CASE WHEN $2 = 0 AND $3 = 0 THEN r.rpm ELSE least(r.cfg_rpm, excluded.rpm) END,
		tpm = CASE WHEN $2 = 0 AND $3 = 0 THEN r.tpm ELSE least(r.cfg_tpm, excluded.tpm) END,
		req_tat = greatest(r.req_tat, excluded.req_tat), tok_tat = greatest(r.tok_tat, excluded.tok_tat),
		blocked_until = greatest(r.blocked_until, excluded.blocked_until), updated_at = now()`

// observeEvery is how often a process writes the provider's word on a
// model's limits when nothing calls for it sooner (a 429, or capacity
// running low).
const observeEvery = 10 * time.Second

// observe writes what the provider said with a call, when it matters: a
// 429's wait always, the remaining capacity when it runs low or has not
// been written for a while.
func (l *limiter) observe(ctx context.Context, db DB, logger *slog.Logger, model string, lim *llm.RateLimits,
	retryAfter time.Duration) error {
	now := time.Now()
	if lim == nil && retryAfter <= 0 {
		return nil
	}
	var rl llm.RateLimits
	if lim != nil {
		rl = *lim
	}
	l.noteLower(ctx, logger, model, rl)
	l.mu.Lock()
	due := retryAfter > 0 || now.Sub(l.observed[model]) >= observeEvery || low(rl)
	if due {
		l.observed[model] = now
	}
	l.mu.Unlock()
	if !due {
		return nil
	}
	blocked := time.Time{}
	if retryAfter > 0 {
		blocked = now.Add(retryAfter)
	}
	_, err := db.Exec(ctx, observeLimitsSQL, model, rl.LimitRequests, rl.LimitTokens,
		bucketClock(now, rl.LimitRequests, rl.RemainingRequests), bucketClock(now, rl.LimitTokens, rl.RemainingTokens),
		blocked)
	if err != nil {
		return fmt.Errorf("error recording the rate limits of %s: %w", model, err)
	}
	return nil
}

// low reports whether a provider says less than half a limit is left.
func low(rl llm.RateLimits) bool {
	return (rl.LimitRequests > 0 && rl.RemainingRequests*2 < rl.LimitRequests) ||
		(rl.LimitTokens > 0 && rl.RemainingTokens*2 < rl.LimitTokens)
}

// bucketClock is the time a bucket of a minute's limit is full again, with
// remaining left of it now; now when the provider gave no figures.
func bucketClock(now time.Time, limit, remaining int) time.Time {
	if limit <= 0 || remaining >= limit {
		return now
	}
	used := float64(limit - max(remaining, 0))
	return now.Add(time.Duration(used * float64(time.Minute) / float64(limit)))
}
