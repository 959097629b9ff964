package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is the circuit breaker of each provider's model, shared by
// every worker through Postgres beside the rate limiter (one row of
// gb_provider_breakers per model, keyed like gb_rate_limits). A call's
// transient failure (a 5xx, an overloaded provider, a connection refused
// or reset, a timeout before the answer) counts against it; after
// OutageConfig.Threshold in a row it opens. While it is open one call at a
// time goes out as a probe, claimed in the statement that reads the
// breaker (gateSQL) with a lease so that a dead prober does not block the
// others, and every other call waits in the queue until after the probe
// (outage.go). A probe that gets any answer closes the breaker and wakes
// the steps that wait for it, oldest tree first, to go through the rate
// limiter at its pace.

// Defaults of OutageConfig.
const (
	// OutageHorizonDefault is how long a run waits out its provider
	// before it ends with the outage's error.
	OutageHorizonDefault = 6 * time.Hour
	// OutageBackoffBaseDefault is the backoff before a step's second try
	// after a transient failure, doubled for each try after it.
	OutageBackoffBaseDefault = time.Second
	// OutageBackoffCapDefault is the longest backoff between two tries.
	OutageBackoffCapDefault = time.Minute
	// BreakerThresholdDefault is how many transient failures in a row
	// open a model's breaker.
	BreakerThresholdDefault = 3
)

// OutageConfig says how steps wait out a provider that is down.
type OutageConfig struct {
	// Horizon is how long a run waits for its provider, from the first
	// transient failure of the outage, before it ends failed with the
	// outage's error (OutageHorizonDefault). The run's own wall-clock cap
	// still applies.
	Horizon time.Duration
	// BackoffBase and BackoffCap bound the exponential backoff, with full
	// jitter, between a step's tries and between the breaker's probes
	// (OutageBackoffBaseDefault, OutageBackoffCapDefault).
	BackoffBase, BackoffCap time.Duration
	// Threshold is how many transient failures in a row open a model's
	// breaker (BreakerThresholdDefault).
	Threshold int
	// ProbeLease is how long a probe's claim holds before another worker
	// may probe; by default the longest a step may take plus a margin.
	ProbeLease time.Duration
}

// withDefaults fills what o leaves empty; stepTimeout bounds a probe.
func (o OutageConfig) withDefaults(stepTimeout time.Duration) OutageConfig {
	o.Horizon = cmp.Or(o.Horizon, OutageHorizonDefault)
	o.BackoffBase = cmp.Or(o.BackoffBase, OutageBackoffBaseDefault)
	o.BackoffCap = cmp.Or(o.BackoffCap, OutageBackoffCapDefault)
	o.Threshold = cmp.Or(o.Threshold, BreakerThresholdDefault)
	o.ProbeLease = cmp.Or(o.ProbeLease, stepTimeout+RescueMarginDefault)
	return o
}

// validate says what is wrong with o.
func (o OutageConfig) validate() error {
	switch {
	case o.Horizon < 0, o.BackoffBase < 0, o.BackoffCap < 0, o.ProbeLease < 0:
		return errors.New("the outage horizon, backoffs and probe lease must not be negative")
	case o.Threshold < 0:
		return fmt.Errorf("the breaker threshold must be at least 1 (got %d)", o.Threshold)
	case o.BackoffCap > 0 && o.BackoffBase > o.BackoffCap:
		return fmt.Errorf("the outage backoff base (%s) must not exceed its cap (%s)", o.BackoffBase, o.BackoffCap)
	}
	return nil
}

// gate is what a model's breaker says of a call about to be made.
type gate struct {
	// open: the breaker is open; probe: this call is its probe, and holds
	// the lease until it ends (breaker.failed, answered or release).
	open, probe bool
	// at is when the next probe may go out, while it is open.
	at time.Time
	// lastError is the last transient failure the breaker counted.
	lastError string
}

// gateSQL reads a model's breaker ($1) and, when it is open and no probe
// is in flight or due later, claims the probe for $2 seconds. The UPDATE
// re-reads the row it locks, so of calls that race only one claims it;
// the SELECT sees the row as it was before the claim.
const gateSQL = `WITH claim AS (
		UPDATE gb_provider_breakers SET probe_until = clock_timestamp() + make_interval(secs => $2::float8),
			probes = probes + 1, updated_at = clock_timestamp()
		WHERE key = $1 AND opened_at IS NOT NULL AND probe_until <= clock_timestamp() AND next_probe_at <= clock_timestamp()
		RETURNING key)
	SELECT b.opened_at IS NOT NULL, EXISTS (SELECT 1 FROM claim), greatest(b.next_probe_at, b.probe_until, 'epoch'),
		b.last_error
	FROM gb_provider_breakers b WHERE b.key = $1`

// gate reads the breaker of model key before a call and claims the probe
// when one is due.
func (a *Service) gate(ctx context.Context, key string) (gate, error) {
	var g gate
	err := a.pool.QueryRow(ctx, gateSQL, key, a.config.Outage.ProbeLease.Seconds()).Scan(&g.open, &g.probe, &g.at, &g.lastError)
	if errors.Is(err, pgx.ErrNoRows) {
		return gate{}, nil // never failed: closed
	}
	if err != nil {
		return gate{}, fmt.Errorf("error reading the breaker of %s: %w", key, err)
	}
	if g.probe {
		a.countBreaker(ctx, key, "probe")
	}
	return g, nil
}

// failedSQL counts a transient failure of a call of model $1 (provider
// $2, error $3) against its breaker: at $4 failures in a row it opens, and
// each failure while it is open puts the next probe a backoff further
// (full jitter, from $5 seconds doubling up to $6). $7 says the call was
// the probe, whose lease it gives up. It returns whether the breaker is
// open, when the next call may go out, and whether this failure opened it
// (its opened_at is this statement's time). The backoff is computed here,
// from the failures stored on the breaker's row, since every worker of
// every process shares the breaker: no in-process backoff could follow it.
const failedSQL = `INSERT INTO gb_provider_breakers AS b (key, provider, failures, first_failed_at, last_failed_at,
		first_error, last_error, opened_at, next_probe_at)
	SELECT $1, $2::text, 1, t.now, t.now, $3::text, $3::text, CASE WHEN $4::int <= 1 THEN t.now END,
		t.now + make_interval(secs => random() * least($6::float8, $5::float8))
	FROM (SELECT clock_timestamp() AS now) t
	ON CONFLICT (key) DO UPDATE SET
		provider = excluded.provider,
		failures = b.failures + 1,
		first_failed_at = CASE WHEN b.failures = 0 THEN excluded.first_failed_at ELSE b.first_failed_at END,
		first_error = CASE WHEN b.failures = 0 THEN excluded.first_error ELSE b.first_error END,
		last_failed_at = excluded.last_failed_at, last_error = excluded.last_error,
		opened_at = CASE WHEN b.opened_at IS NULL AND b.failures + 1 >= $4::int THEN excluded.last_failed_at
			ELSE b.opened_at END,
		probes = CASE WHEN b.opened_at IS NULL THEN 0 ELSE b.probes END,
		next_probe_at = CASE WHEN b.opened_at IS NOT NULL OR b.failures + 1 >= $4::int
			THEN excluded.last_failed_at + make_interval(secs => random() *
				least($6::float8, $5::float8 * power(2, least(greatest(b.failures + 1 - $4::int, 0), 20))))
			ELSE b.next_probe_at END,
		probe_until = CASE WHEN $7::boolean THEN '-infinity' ELSE b.probe_until END,
		updated_at = excluded.last_failed_at
	RETURNING opened_at IS NOT NULL, greatest(next_probe_at, probe_until, 'epoch'),
		opened_at IS NOT NULL AND opened_at = last_failed_at`

// failed counts a transient failure of a call of model key against its
// breaker and says whether it is open and when the next call may go out.
func (a *Service) failed(ctx context.Context, key, provider, msg string, probe bool) (gate, error) {
	o := a.config.Outage
	g := gate{lastError: msg}
	var opened bool
	err := a.pool.QueryRow(context.WithoutCancel(ctx), failedSQL, key, provider, msg, o.Threshold,
		o.BackoffBase.Seconds(), o.BackoffCap.Seconds(), probe).Scan(&g.open, &g.at, &opened)
	if err != nil {
		return gate{}, fmt.Errorf("error counting a failure against the breaker of %s: %w", key, err)
	}
	if opened {
		a.logger.WarnContext(ctx, "provider breaker opened", "model", key, "provider", provider, "err", msg)
		a.countBreaker(ctx, key, "opened")
	}
	return g, nil
}

// answeredSQL closes the breaker of model $1 after a call got an answer
// (any answer: the provider is there), and returns whether it was open.
const answeredSQL = `WITH old AS (SELECT opened_at FROM gb_provider_breakers WHERE key = $1 AND failures > 0 FOR UPDATE)
	UPDATE gb_provider_breakers b SET failures = 0, opened_at = NULL, probe_until = '-infinity',
		next_probe_at = '-infinity', updated_at = clock_timestamp(),
		closed_at = CASE WHEN old.opened_at IS NOT NULL THEN clock_timestamp() ELSE b.closed_at END
	FROM old WHERE b.key = $1
	RETURNING old.opened_at IS NOT NULL`

// answered tells the breaker of model key that a call got an answer: it
// closes, and when it was open the steps that wait for it are woken, the
// oldest tree first.
func (a *Service) answered(ctx context.Context, key string) error {
	ctx = context.WithoutCancel(ctx)
	var wasOpen bool
	err := a.pool.QueryRow(ctx, answeredSQL, key).Scan(&wasOpen)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // it was not counting failures
	}
	if err != nil {
		return fmt.Errorf("error closing the breaker of %s: %w", key, err)
	}
	if !wasOpen {
		return nil
	}
	n, err := wakeProviderWaits(ctx, a.pool, key)
	if err != nil {
		return err
	}
	a.logger.InfoContext(ctx, "provider breaker closed", "model", key, "woken", n)
	a.countBreaker(ctx, key, "closed")
	return nil
}

// release gives up a probe's claim that made no call (the rate limiter or
// the budget held it back), so that another may probe now.
func (a *Service) release(ctx context.Context, key string) {
	_, err := a.pool.Exec(context.WithoutCancel(ctx),
		`UPDATE gb_provider_breakers SET probe_until = '-infinity' WHERE key = $1`, key)
	if err != nil {
		a.logger.WarnContext(ctx, "could not release a breaker's probe; its lease runs out", "model", key, "err", err)
	}
}

// Breaker is the state of one model's breaker, as `gb providers` shows it.
type Breaker struct {
	Model    string `json:"model"`
	Provider string `json:"provider"`
	// State is closed, open, or probing (open with a probe in flight).
	State string `json:"state"`
	// Failures counts the transient failures in a row.
	Failures      int        `json:"failures"`
	OpenedAt      *time.Time `json:"opened_at,omitempty"`
	FirstFailedAt *time.Time `json:"first_failed_at,omitempty"`
	LastFailedAt  *time.Time `json:"last_failed_at,omitempty"`
	FirstError    string     `json:"first_error,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	// NextProbe is when the next probe may go out, while open.
	NextProbe *time.Time `json:"next_probe,omitempty"`
	// Probes counts the probes sent since it last opened.
	Probes   int64      `json:"probes"`
	ClosedAt *time.Time `json:"closed_at,omitempty"`
	// Waiting counts the runs waiting for the model's provider.
	Waiting int `json:"waiting"`
}

// Breaker states.
const (
	BreakerClosed  = "closed"
	BreakerOpen    = "open"
	BreakerProbing = "probing"
)

// breakersSQL lists the breakers with the runs waiting for each.
const breakersSQL = `SELECT b.key, b.provider,
		CASE WHEN b.opened_at IS NULL THEN 'closed' WHEN b.probe_until > now() THEN 'probing' ELSE 'open' END,
		b.failures, b.opened_at, b.first_failed_at, b.last_failed_at, b.first_error, b.last_error,
		CASE WHEN b.opened_at IS NOT NULL THEN greatest(b.next_probe_at, b.probe_until, 'epoch') END, b.probes, b.closed_at,
		(SELECT count(*) FROM gb_agent_research_runs r WHERE r.ended_at IS NULL AND r.state = 'waiting_provider'
			AND r.provider_wait->>'model' = b.key)::int
	FROM gb_provider_breakers b ORDER BY b.key`

// Breakers lists every model's breaker.
func Breakers(ctx context.Context, db DB) ([]Breaker, error) {
	rows, err := db.Query(ctx, breakersSQL)
	if err != nil {
		return nil, fmt.Errorf("error reading the breakers: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Breaker])
	if err != nil {
		return nil, fmt.Errorf("error reading the breakers: %w", err)
	}
	return out, nil
}
