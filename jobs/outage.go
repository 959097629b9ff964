package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file is how a run waits out a provider that is down: a step whose
// call failed for a transient reason, or that the model's open breaker
// (breaker.go) holds back, goes back to the queue without spending an
// attempt or holding a slot (a snooze), with exponential backoff and full
// jitter, or until the breaker's next probe. The run shows it: state
// waiting_provider, its ProviderWait (the provider's last error and the
// next try), and one event when the wait begins and one when the provider
// answers again. The wait is durable (the run's provider_wait column), so
// the outage horizon counts from the outage's first failure whatever
// workers restart meanwhile; past it the run ends with the outage's error.

// Events of a run waiting out its provider.
const (
	// EventWaitingProvider: a run's provider failed (or its breaker is
	// open) and the run waits for it, its steps put back in the queue
	// (data: provider, model, error, next_try). Once per outage.
	EventWaitingProvider = "waiting_provider"
	// EventProviderRecovered: the provider answered a run that waited for
	// it (data: provider, model, waited_seconds, tries).
	EventProviderRecovered = "provider_recovered"
)

// ProviderWait is what a run waiting for its provider knows of the outage
// (Run.ProviderWait, while its state is waiting_provider).
type ProviderWait struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Since is when the run first met the outage; the horizon counts from it.
	Since      time.Time `json:"since"`
	FirstError string    `json:"first_error"`
	LastError  string    `json:"last_error"`
	// Tries counts the run's calls that failed in the outage.
	Tries int `json:"tries"`
	// NextTry is when the run's step runs again.
	NextTry time.Time `json:"next_try"`
}

// providerKey is the breaker's key of a run's model (the rate limiter's
// key too) and its provider's name.
func (a *Service) providerKey(run *Run) (key, provider string) {
	m := a.modelFor(run)
	return m.Name(), providerOf(m)
}

// gateCall asks the model's breaker before a call: it returns whether the
// call is the breaker's probe, or the snooze of a step that must wait for
// the probe.
func (a *Service) gateCall(ctx context.Context, t *turn) (probe bool, err error) {
	key, _ := a.providerKey(t.run)
	g, err := a.gate(ctx, key)
	if err != nil {
		return false, err
	}
	if !g.open || g.probe {
		return g.probe, nil
	}
	return false, a.waitForProvider(ctx, t, g.lastError, g.at, false)
}

// releaseProbe gives up the breaker's probe a step claimed and did not
// make.
func (a *Service) releaseProbe(ctx context.Context, t *turn) {
	key, _ := a.providerKey(t.run)
	a.release(ctx, key)
}

// providerAnswered is what follows any answer of the provider, usable or
// not: its breaker closes, and a run that waited for it goes on.
func (a *Service) providerAnswered(ctx context.Context, t *turn) {
	key, _ := a.providerKey(t.run)
	if err := a.answered(ctx, key); err != nil {
		a.logger.WarnContext(ctx, "could not close a provider's breaker", "model", key, "err", err)
	}
	if t.run.ProviderWait == nil {
		return
	}
	if err := a.recovered(ctx, t); err != nil {
		a.logger.WarnContext(ctx, "could not record the end of a provider wait", "run_id", t.run.ID, "err", err)
	}
}

// transientFailure reports whether a call's error is the provider's
// transient failure, and not the step's interruption: a transient error
// while the step's context lives, or ended only by its own timeout (a
// provider that hung).
func transientFailure(ctx context.Context, err error) bool {
	if !errors.Is(err, llm.ErrTransient) {
		return false
	}
	return ctx.Err() == nil || errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// providerFailed counts a call's transient failure against its model's
// breaker and puts the step back to wait (waitForProvider); probe says the
// call was the breaker's probe.
func (a *Service) providerFailed(ctx context.Context, t *turn, callErr error, probe bool) error {
	key, provider := a.providerKey(t.run)
	msg := callErr.Error()
	g, err := a.failed(ctx, key, provider, msg, probe)
	if err != nil {
		return err
	}
	var at time.Time
	if g.open {
		at = g.at
	}
	return a.waitForProvider(ctx, t, msg, at, true)
}

// waitForProvider puts a step back in the queue to wait for its provider
// and records the wait on its run: until at (the breaker's next probe)
// when it is set, else after a backoff with full jitter; tried says the
// step's own call failed (msg is its error, else the breaker's last). Past
// the outage horizon it ends the run instead.
func (a *Service) waitForProvider(ctx context.Context, t *turn, msg string, at time.Time, tried bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second) // the step's may be spent
	defer cancel()
	run, o, now := t.run, a.config.Outage, time.Now()
	key, provider := a.providerKey(run)
	first := run.ProviderWait == nil
	var w ProviderWait
	if first {
		w = ProviderWait{Provider: provider, Model: key, Since: now, FirstError: msg}
	} else {
		w = *run.ProviderWait
	}
	if tried {
		w.Tries++
	}
	if msg != "" {
		w.LastError = msg
	}
	if now.Sub(w.Since) >= o.Horizon {
		return a.endOutage(ctx, t, w, now)
	}
	if run.Deadline != nil && !now.Before(*run.Deadline) {
		// The run's own wall clock ran out while it waited: it ends timed_out.
		return fmt.Errorf("run %d waiting for %s: %w", run.ID, key, errWallClock)
	}
	w.NextTry = a.nextTry(run, w.Tries, at, now)
	if err := a.recordWait(ctx, run, w, first); err != nil {
		return err
	}
	run.ProviderWait = &w
	return river.JobSnooze(w.NextTry.Sub(now))
}

// nextTry is when a waiting step runs again: after the breaker's next
// probe (at), spread over a base backoff so that the waiting steps do not
// all come at once, or after an exponential backoff with full jitter from
// its tries; never later than the backoff cap (so that the horizon is
// checked) or the run's deadline.
func (a *Service) nextTry(run *Run, tries int, at, now time.Time) time.Time {
	o := a.config.Outage
	var next time.Time
	if !at.IsZero() {
		next = at.Add(rand.N(o.BackoffBase + 1))
	} else {
		next = now.Add(fullJitter(o.BackoffBase, o.BackoffCap, tries))
	}
	next = minTime(next, now.Add(o.BackoffCap))
	if run.Deadline != nil {
		next = minTime(next, *run.Deadline)
	}
	return maxTime(next, now.Add(10*time.Millisecond))
}

// fullJitter is a backoff of base doubled for each try after the first,
// at most limit, drawn uniformly from zero up to it. It is a formula of
// the tries counted on the run's provider wait, stored in Postgres, since
// each try is a job of its own (possibly in another process), not a turn
// of an in-process loop that a backoff object could follow.
func fullJitter(base, limit time.Duration, tries int) time.Duration {
	d := base << min(max(tries-1, 0), 30)
	if d <= 0 || d > limit {
		d = limit
	}
	return rand.N(d + 1)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// markWaitingSQL records a run's provider wait; @first also moves it to
// state waiting_provider, with a row of its state history.
const markWaitingSQL = `WITH u AS (
		UPDATE gb_agent_research_runs SET provider_wait = @wait,
			state = CASE WHEN @first THEN '` + StateWaitingProvider + `' ELSE state END,
			updated_at = CASE WHEN @first THEN now() ELSE updated_at END
		WHERE id = @run AND ended_at IS NULL
		RETURNING id, steps)
	INSERT INTO gb_agent_research_states (run_id, state, step)
	SELECT id, '` + StateWaitingProvider + `', steps + 1 FROM u WHERE @first`

// recordWait writes a run's provider wait; the first try of an outage
// also changes its state and adds the event, with its tree locked.
func (a *Service) recordWait(ctx context.Context, run *Run, w ProviderWait, first bool) error {
	args := pgx.NamedArgs{"run": run.ID, "wait": w, "first": first}
	if !first {
		if _, err := a.pool.Exec(ctx, markWaitingSQL, args); err != nil {
			return fmt.Errorf("error recording the provider wait of run %d: %w", run.ID, err)
		}
		return nil
	}
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		locked, err := a.lockTree(ctx, tx, run)
		if err != nil || locked == nil || locked.Ended() {
			return err
		}
		if _, err := tx.Exec(ctx, markWaitingSQL, args); err != nil {
			return fmt.Errorf("error recording the provider wait of run %d: %w", run.ID, err)
		}
		return addEvent(ctx, tx, locked, EventWaitingProvider, map[string]any{"provider": w.Provider,
			"model": w.Model, "error": w.LastError, "next_try": w.NextTry})
	})
}

// recoveredSQL ends a run's provider wait: it thinks again.
const recoveredSQL = `WITH u AS (
		UPDATE gb_agent_research_runs SET provider_wait = NULL, state = '` + StateThinking + `', updated_at = now()
		WHERE id = $1 AND provider_wait IS NOT NULL AND ended_at IS NULL
		RETURNING id, steps, state)
	INSERT INTO gb_agent_research_states (run_id, state, step) SELECT id, state, steps + 1 FROM u`

// recovered records that a run's provider answered after it waited.
func (a *Service) recovered(ctx context.Context, t *turn) error {
	w := *t.run.ProviderWait
	ctx = context.WithoutCancel(ctx)
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		locked, err := a.lockTree(ctx, tx, t.run)
		if err != nil || locked == nil {
			return err
		}
		if _, err := tx.Exec(ctx, recoveredSQL, t.run.ID); err != nil {
			return fmt.Errorf("error ending the provider wait of run %d: %w", t.run.ID, err)
		}
		return addEvent(ctx, tx, locked, EventProviderRecovered, map[string]any{"provider": w.Provider,
			"model": w.Model, "waited_seconds": time.Since(w.Since).Seconds(), "tries": w.Tries})
	})
	if err != nil {
		return err
	}
	t.run.ProviderWait, t.run.State = nil, StateThinking
	return nil
}

// endOutage ends a run whose provider stayed down past the horizon, with
// an error that names the outage.
func (a *Service) endOutage(ctx context.Context, t *turn, w ProviderWait, now time.Time) error {
	msg := fmt.Sprintf("provider outage: %s did not answer for model %s for %s, past the outage horizon of %s "+
		"(GB_OUTAGE_HORIZON), after %d tries; first error at %s: %s; last error: %s",
		w.Provider, w.Model, now.Sub(w.Since).Round(time.Second), a.config.Outage.Horizon, w.Tries,
		w.Since.UTC().Format(time.RFC3339), w.FirstError, w.LastError)
	a.logger.ErrorContext(ctx, "run ended by a provider outage", "run_id", t.run.ID, "model", w.Model,
		"since", w.Since, "tries", w.Tries, "err", w.LastError)
	return a.endWithFindings(ctx, t, msg)
}
