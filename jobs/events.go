package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event kinds of a tree's timeline.
const (
	EventQueued    = "queued"
	EventSpawned   = "spawned"
	EventStep      = "step"
	EventTool      = "tool"
	EventMessage   = "message"
	EventWaiting   = "waiting"
	EventResumed   = "resumed"
	EventCompleted = "completed"
	EventFailed    = "failed"
	EventCancelled = "cancelled"
	// EventRepaired: the maintenance pass gave a run a way forward it had
	// lost (a new step job, a resume, or an end that explains it).
	EventRepaired = "repaired"
	// EventBudget: the tree's budget stopped the root's research and left
	// it its closing report.
	EventBudget = "budget_exhausted"
)

// Event is one entry of a tree's timeline.
type Event struct {
	Seq      int64           `json:"seq"`
	RootID   int64           `json:"root_id"`
	RunID    int64           `json:"run_id"`
	ParentID *int64          `json:"parent_id"`
	Kind     string          `json:"kind"`
	Data     json.RawMessage `json:"data"`
	At       time.Time       `json:"at"`
}

// addEvent appends an event for run to its tree's timeline.
func addEvent(ctx context.Context, db DB, run *Run, kind string, data map[string]any) error {
	if data == nil {
		data = map[string]any{}
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("error encoding event: %w", err)
	}
	_, err = db.Exec(ctx, `INSERT INTO gb_agent_research_events (root_id, run_id, parent_id, kind, data)
		VALUES ($1, $2, $3, $4, $5)`, run.RootID, run.ID, run.ParentID, kind, string(b))
	if err != nil {
		return fmt.Errorf("error recording event %s: %w", kind, err)
	}
	return nil
}

// Events returns the events of a tree after seq, oldest first, at most limit.
func Events(ctx context.Context, db DB, rootID, after int64, limit int) ([]Event, error) {
	rows, err := db.Query(ctx, `SELECT seq, root_id, run_id, parent_id, kind, data, at
		FROM gb_agent_research_events WHERE root_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		rootID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("error reading events: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Event])
}
