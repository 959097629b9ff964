package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Event kinds of a tree's timeline.
const (
	EventQueued    = "queued"
	EventSpawned   = "spawned"
	EventStep      = "step"
	EventMessage   = "message"
	EventWaiting   = "waiting"
	EventResumed   = "resumed"
	EventCompleted = "completed"
	EventFailed    = "failed"
	EventCancelled = "cancelled"
	EventTimedOut  = "timed_out"
	// EventBlocked: a tool call refused because the agent's type does not
	// allow the tool.
	EventBlocked = "blocked"
	// EventRepaired: the maintenance pass gave a run a way forward it had
	// lost (a new step job, a resume, or an end that explains it).
	EventRepaired = "repaired"
	// EventBudget: the tree's budget stopped the root's research and left
	// it its closing report.
	EventBudget = "budget_exhausted"
	// EventInputRequired: a root asked its owner a question (ask_owner)
	// and parked until an answer or its deadline.
	EventInputRequired = "input_required"
	// EventAnswered: a root's question was answered, by its owner or by
	// its deadline (data "by"), and the root went on.
	EventAnswered = "answered"
	// EventPlanProposed: a root started with approve_plan proposed the
	// sub-agents it means to spawn (propose_plan) and parked until its
	// owner's decision or its deadline.
	EventPlanProposed = "plan_proposed"
	// EventPlanDecided: a root's plan was approved or rejected by its
	// owner, or expired at its deadline (data "by" and "decision"), and
	// the root went on.
	EventPlanDecided = "plan_decided"
	// EventVersion: with GB_PIN=latest, a run's step was made with
	// another behaviour bundle than the run's before (behaviour.go): data
	// step, from and to, the bundles' hashes.
	EventVersion = "version"
)

// Event is one entry of a tree's timeline. Seq grows with each event of
// every tree, so within a tree it orders the events and serves as the
// cursor of Events (after=Seq).
type Event struct {
	Seq int64 `json:"seq"`
	// N is the event's place in its tree's timeline, from 1: the per-tree
	// sequence number people read. Seq is the cursor.
	N        int64  `json:"n"`
	RootID   int64  `json:"root_id"`
	RunID    int64  `json:"run_id"`
	ParentID *int64 `json:"parent_id"`
	// Agent is the name of the run the event is about: "root" for the
	// root, the sub-agent's name otherwise.
	Agent string          `json:"agent"`
	Kind  string          `json:"kind"`
	Data  json.RawMessage `json:"data"`
	At    time.Time       `json:"at"`
}

// EventsChannel is the NOTIFY channel of new events; the payload is the
// root id of the tree. It is sent only while a reader holds a lease in
// gb_event_waiters (see WaitEvents).
const EventsChannel = "gb_events"

// MaxEventWait is the longest wait WaitEvents allows, short enough for a
// long poll to fit API Gateway's 30 s limit.
const MaxEventWait = 25 * time.Second

// EventFallbackDefault is how often a waiting reader re-reads the events
// when EventWait.Fallback is 0, whatever notifications say.
const EventFallbackDefault = time.Second

// addEventSQL records an event and, in the same statement, queues a NOTIFY
// for its tree only when a reader holds a live lease on it.
const addEventSQL = `
WITH ins AS (
    INSERT INTO gb_agent_research_events (root_id, run_id, parent_id, kind, data)
    VALUES ($1, $2, $3, $4, $5) RETURNING root_id
)
SELECT pg_notify($6, ins.root_id::text)
FROM ins JOIN gb_event_waiters w ON w.root_id = ins.root_id
WHERE w.waiting_until > now()`

// addEvent appends an event for run to its tree's timeline. Every caller
// holds the tree's root lock (or, starting a research, has just inserted
// the root), so the events of a tree take their numbers in the order their
// transactions commit: a reader that has seen seq N never misses an event
// below it that commits later.
func addEvent(ctx context.Context, db DB, run *Run, kind string, data map[string]any) error {
	args, err := eventArgs(run, kind, data)
	if err != nil {
		return err
	}
	if _, err := db.Exec(ctx, addEventSQL, args...); err != nil {
		return fmt.Errorf("error recording event %s: %w", kind, err)
	}
	return nil
}

// eventArgs are the arguments of addEventSQL for an event of run.
func eventArgs(run *Run, kind string, data map[string]any) ([]any, error) {
	if data == nil {
		data = map[string]any{}
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("error encoding event: %w", err)
	}
	return []any{run.RootID, run.ID, run.ParentID, kind, string(b), EventsChannel}, nil
}

// Events returns the events of a tree after seq, oldest first, at most limit.
func Events(ctx context.Context, db DB, rootID, after int64, limit int) ([]Event, error) {
	rows, err := db.Query(ctx, `SELECT seq, n, root_id, run_id, parent_id, agent, kind, data, at FROM (
			SELECT e.seq, row_number() OVER (ORDER BY e.seq) AS n, e.root_id, e.run_id, e.parent_id,
				CASE WHEN e.run_id = e.root_id THEN 'root'
				     ELSE coalesce(nullif(r.name, ''), '#' || e.run_id) END AS agent,
				e.kind, e.data, e.at
			FROM gb_agent_research_events e LEFT JOIN gb_agent_research_runs r ON r.id = e.run_id
			WHERE e.root_id = $1) AS t
		WHERE seq > $2 ORDER BY seq LIMIT $3`,
		rootID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("error reading events: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Event])
}

// Notifier wakes waiters on a NOTIFY channel; *messenger.Listener is one.
type Notifier interface {
	// Subscribe returns a channel woken when a notification on channel
	// carries id, and a func to call when done.
	Subscribe(channel string, id int64) (<-chan struct{}, func())
}

// EventWait is a long poll on a tree's events.
type EventWait struct {
	// RootID is the root run of the tree.
	RootID int64
	// After is the seq of the last event the reader has.
	After int64
	// Limit is the most events returned at once.
	Limit int
	// Wait is how long to wait for an event when there is none yet, at
	// most MaxEventWait; 0 answers at once.
	Wait time.Duration
	// Notifier wakes the wait when an event lands; nil means re-reading on
	// the fallback timer only.
	Notifier Notifier
	// Fallback is how often the events are re-read while waiting, whatever
	// the notifier says; 0 means EventFallbackDefault.
	Fallback time.Duration
}

// WaitEvents returns the events of a tree after w.After; when there are
// none it waits up to w.Wait for one, holding no connection meanwhile, and
// returns nothing when the wait ends empty. The waiter subscribes to
// EventsChannel, then takes a lease in gb_event_waiters so that the
// statements recording events notify, then reads again: an event committed
// after that read wakes it through the notifier, and the events table is
// re-read on the fallback timer in case a notification was lost.
func WaitEvents(ctx context.Context, db DB, w EventWait) ([]Event, error) {
	evs, err := Events(ctx, db, w.RootID, w.After, w.Limit)
	if err != nil || len(evs) > 0 || w.Wait <= 0 {
		return evs, err
	}
	deadline := time.Now().Add(min(w.Wait, MaxEventWait))
	var wake <-chan struct{}
	if w.Notifier != nil {
		c, done := w.Notifier.Subscribe(EventsChannel, w.RootID)
		defer done()
		wake = c
	}
	if err := takeEventLease(ctx, db, w.RootID, time.Until(deadline)); err != nil {
		return nil, err
	}
	fallback := cmp.Or(w.Fallback, EventFallbackDefault)
	for {
		evs, err := Events(ctx, db, w.RootID, w.After, w.Limit)
		left := time.Until(deadline)
		if err != nil || len(evs) > 0 || left <= 0 {
			return evs, err
		}
		t := time.NewTimer(min(left, fallback))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for events of tree %d: %w", w.RootID, ctx.Err())
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// takeEventLease makes the tree's event statements notify for the next d.
// Leases only grow and are never dropped early: another reader may wait on
// the same tree, and a lease ends by itself within MaxEventWait.
func takeEventLease(ctx context.Context, db DB, rootID int64, d time.Duration) error {
	_, err := db.Exec(ctx, `INSERT INTO gb_event_waiters AS w (root_id, waiting_until)
		VALUES ($1, now() + $2 * interval '1 microsecond')
		ON CONFLICT (root_id) DO UPDATE
		SET waiting_until = greatest(w.waiting_until, excluded.waiting_until)`, rootID, d.Microseconds())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		return fmt.Errorf("waiting for events of tree %d: %w", rootID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("error taking the events lease of tree %d: %w", rootID, err)
	}
	return nil
}
