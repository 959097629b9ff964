package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gbresearch/gb/jobs/cite"
)

// Run statuses.
const (
	StatusQueued    = "queued"
	StatusWorking   = "working"
	StatusWaiting   = "waiting"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	// StatusTimedOut: a sub-agent ran past its type's wall-clock cap.
	StatusTimedOut = "timed_out"
)

// Agent states, recorded in the run's state history as they change.
const (
	StateQueued    = "queued"
	StateThinking  = "thinking"
	StateSearching = "searching"
	StateReading   = "reading"
	StateWriting   = "writing"
	StateSpawning  = "spawning"
	StateWaiting   = "waiting"
	StateMessaging = "messaging"
	// StateInputRequired: a root parked on ask_owner, waiting for its
	// owner's answer.
	StateInputRequired = "input_required"
	StateDone          = "done"
	StateFailed        = "failed"
	StateTimedOut      = "timed_out"
)

// ErrNotFound is returned for a run that does not exist or that the caller
// does not own.
var ErrNotFound = errors.New("run not found")

// DB is what the store needs of a pool or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Run is one agent: a root research or a sub-agent.
type Run struct {
	ID               int64  `json:"id"`
	UserID           int64  `json:"-"`
	ParentID         *int64 `json:"parent_id"`
	RootID           int64  `json:"root_id"`
	Depth            int    `json:"depth"`
	Name             string `json:"name"`
	Reason           string `json:"reason"`
	Topic            string `json:"topic"`
	Model            string `json:"model"`
	Dataset          string `json:"dataset"`
	Status           string `json:"status"`
	State            string `json:"state"`
	MaxSteps         int    `json:"max_steps"`
	Steps            int    `json:"steps"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	// CachedTokens is the part of PromptTokens the provider read from its
	// prompt cache; ReasoningTokens the part of CompletionTokens a
	// reasoning model spent thinking.
	CachedTokens    int64    `json:"cached_tokens"`
	ReasoningTokens int64    `json:"reasoning_tokens"`
	Tokens          int64    `json:"tokens"`
	CostUSD         float64  `json:"cost_usd"`
	MaxCostUSD      *float64 `json:"max_cost_usd,omitempty"`
	MaxTokens       *int64   `json:"max_tokens,omitempty"`
	// MaxSubagents bounds the sub-agents of the run's tree.
	MaxSubagents int `json:"max_subagents"`
	// AgentType is a sub-agent's type ("" for a root).
	AgentType string `json:"agent_type,omitempty"`
	// Deadline is when a sub-agent's wall clock runs out (nil: no cap).
	Deadline *time.Time `json:"deadline,omitempty"`
	// WaitNames and WaitCallID are what a parked wait_subagents waits
	// for and the call it answers; WaitKind says what the parked call
	// waits for (waitSubagents or waitMessages), WaitUntil when a message
	// wait ends, and WaitReadTo the newest message a resumed message wait
	// delivers. They mean something only while WaitCallID is set.
	WaitNames  []string   `json:"-"`
	WaitCallID string     `json:"-"`
	WaitKind   string     `json:"-"`
	WaitUntil  *time.Time `json:"-"`
	WaitReadTo int64      `json:"-"`
	// Interactive says a root may ask its owner (ask_owner), and
	// AnswerTimeoutSeconds how long each question waits for an answer.
	Interactive          bool `json:"interactive"`
	AnswerTimeoutSeconds int  `json:"answer_timeout_seconds,omitempty"`
	// Question and AnswerDeadline are the question a root parked on
	// ask_owner waits on and when it goes on without an answer; set only
	// while it waits (WaitsForAnswer).
	Question       string     `json:"question,omitempty"`
	AnswerDeadline *time.Time `json:"answer_deadline,omitempty"`
	// answer is what resumed the run's last question: the owner's text,
	// or nil when its deadline did.
	answer *string
	// ApprovePlan says a root must propose its sub-agents (propose_plan)
	// and have its owner approve them before it spawns; Plan is its last
	// plan and where it stands (nil before the first proposal).
	ApprovePlan bool  `json:"approve_plan"`
	Plan        *Plan `json:"plan,omitempty"`
	// planCallID is the id of the run's last propose_plan call.
	planCallID string
	Report     string `json:"report"`
	// CitationsMode is what the research does with its report's citations
	// (citations.go); Citations the counts of the last check of the run's
	// report (nil before one), CitationsBefore those of the check before
	// the root revised it.
	CitationsMode   string       `json:"citations_mode"`
	Citations       *cite.Counts `json:"citations"`
	CitationsBefore *cite.Counts `json:"citations_before,omitempty"`
	Error           string       `json:"error"`
	CreatedAt       time.Time    `json:"created_at"`
	// TreeStartedAt is when the run's tree started (its root's CreatedAt).
	TreeStartedAt time.Time  `json:"-"`
	StartedAt     *time.Time `json:"started_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	EndedAt       *time.Time `json:"ended_at"`
}

// Ended reports whether the run has finished, one way or the other.
func (r *Run) Ended() bool {
	return r.Status == StatusSucceeded || r.Status == StatusFailed || r.Status == StatusTimedOut
}

// What a parked call waits for (Run.WaitKind).
const (
	waitSubagents = "subagents"
	waitMessages  = "messages"
	waitOwner     = "owner"
)

// waitsForMessages reports whether the run's parked call, or the call its
// next step answers, is a read_messages wait.
func (r *Run) waitsForMessages() bool { return r.WaitCallID != "" && r.WaitKind == waitMessages }

// waitsForOwner reports whether the run's parked call, or the call its
// next step answers, is an ask_owner question.
func (r *Run) waitsForOwner() bool { return r.WaitCallID != "" && r.WaitKind == waitOwner }

// WaitsForAnswer reports whether the run is parked on a question to its
// owner, which an answer (Agent.Answer) or its deadline resumes.
func (r *Run) WaitsForAnswer() bool {
	return r.Status == StatusWaiting && r.waitsForOwner() && r.WaitCallID != r.planCallID
}

// WaitsForPlan reports whether the run is parked on the plan it proposed,
// which its owner's decision (Agent.DecidePlan) or its deadline resumes.
func (r *Run) WaitsForPlan() bool {
	return r.Status == StatusWaiting && r.waitsForOwner() && r.WaitCallID == r.planCallID
}

// IsRoot reports whether a user started the run (it has no parent).
func (r *Run) IsRoot() bool { return r.ParentID == nil }

const runColumns = `id, user_id, parent_id, root_id, depth, name, reason, topic, model, dataset,
	status, state, max_steps, steps, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens,
	tokens, cost_usd::float8,
	max_cost_usd::float8, max_tokens, max_subagents, agent_type, deadline, wait_names, wait_call_id,
	wait_kind, wait_until, wait_read_to, interactive, answer_timeout_s, question, answer,
	approve_plan, plan, plan_state, plan_note, plan_call_id, report, error,
	created_at, started_at, updated_at, ended_at, tree_started_at,
	citations_mode, citations, citations_before`

// runByIDSQL reads one run.
const runByIDSQL = "SELECT " + runColumns + " FROM gb_agent_research_runs WHERE id = $1"

func scanRun(row pgx.Row) (*Run, error) {
	var r Run
	var planJSON []byte
	var planState, planNote string
	err := row.Scan(&r.ID, &r.UserID, &r.ParentID, &r.RootID, &r.Depth, &r.Name, &r.Reason,
		&r.Topic, &r.Model, &r.Dataset, &r.Status, &r.State, &r.MaxSteps, &r.Steps,
		&r.PromptTokens, &r.CompletionTokens, &r.CachedTokens, &r.ReasoningTokens, &r.Tokens, &r.CostUSD, &r.MaxCostUSD, &r.MaxTokens,
		&r.MaxSubagents, &r.AgentType, &r.Deadline, &r.WaitNames, &r.WaitCallID,
		&r.WaitKind, &r.WaitUntil, &r.WaitReadTo, &r.Interactive, &r.AnswerTimeoutSeconds, &r.Question, &r.answer,
		&r.ApprovePlan, &planJSON, &planState, &planNote, &r.planCallID,
		&r.Report, &r.Error, &r.CreatedAt, &r.StartedAt, &r.UpdatedAt, &r.EndedAt, &r.TreeStartedAt,
		&r.CitationsMode, &r.Citations, &r.CitationsBefore)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("error reading run: %w", err)
	}
	if r.WaitsForAnswer() {
		r.AnswerDeadline = r.WaitUntil
	} else {
		r.Question = "" // a question shows only while it waits
	}
	if !r.Interactive && !r.ApprovePlan {
		r.AnswerTimeoutSeconds = 0
	}
	if r.Plan, err = readPlan(&r, planJSON, planState, planNote); err != nil {
		return nil, err
	}
	return &r, nil
}

// GetRun loads a run by id, whoever owns it.
func GetRun(ctx context.Context, db DB, id int64) (*Run, error) {
	return scanRun(db.QueryRow(ctx, runByIDSQL, id))
}

// lockRun loads a run and locks its row until the transaction ends.
func lockRun(ctx context.Context, tx pgx.Tx, id int64) (*Run, error) {
	return scanRun(tx.QueryRow(ctx, "SELECT "+runColumns+" FROM gb_agent_research_runs WHERE id = $1 FOR UPDATE", id))
}

// children lists the sub-agents of a run, oldest first.
func children(ctx context.Context, db DB, parentID int64) ([]*Run, error) {
	return queryRuns(ctx, db, "SELECT "+runColumns+" FROM gb_agent_research_runs WHERE parent_id = $1 ORDER BY id", parentID)
}

func queryRuns(ctx context.Context, db DB, sql string, args ...any) ([]*Run, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("error querying runs: %w", err)
	}
	defer rows.Close()
	var runs []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error querying runs: %w", err)
	}
	return runs, nil
}

// setState records a state change of a run: its current state and a row of
// its history. It runs on its own so progress shows while a step works.
func setState(ctx context.Context, db DB, runID int64, state string, step int) error {
	_, err := db.Exec(ctx, `WITH u AS (
			UPDATE gb_agent_research_runs SET state = $2, updated_at = now()
			WHERE id = $1 AND status NOT IN ('succeeded', 'failed', 'timed_out') AND state <> $2
			RETURNING id)
		INSERT INTO gb_agent_research_states (run_id, state, step) SELECT id, $2, $3 FROM u`,
		runID, state, step)
	if err != nil {
		return fmt.Errorf("error recording state %s: %w", state, err)
	}
	return nil
}

// StateChange is one entry of a run's state history.
type StateChange struct {
	State string    `json:"state"`
	Step  int       `json:"step"`
	At    time.Time `json:"at"`
}

// States returns a run's state history, oldest first.
func States(ctx context.Context, db DB, runID int64) ([]StateChange, error) {
	rows, err := db.Query(ctx, "SELECT state, step, at FROM gb_agent_research_states WHERE run_id = $1 ORDER BY id", runID)
	if err != nil {
		return nil, fmt.Errorf("error reading states: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[StateChange])
}
