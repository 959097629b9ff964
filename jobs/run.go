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
	// StateWaitingProvider: a run whose provider is down (5xx, overloaded,
	// unreachable) waits for it, its step back in the queue (outage.go).
	StateWaitingProvider = "waiting_provider"
	StateDone            = "done"
	StateFailed          = "failed"
	StateTimedOut        = "timed_out"
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
	ID               int64  `json:"id" db:"id"`
	UserID           int64  `json:"-" db:"user_id"`
	ParentID         *int64 `json:"parent_id" db:"parent_id"`
	RootID           int64  `json:"root_id" db:"root_id"`
	Depth            int    `json:"depth" db:"depth"`
	Name             string `json:"name" db:"name"`
	Reason           string `json:"reason" db:"reason"`
	Topic            string `json:"topic" db:"topic"`
	Model            string `json:"model" db:"model"`
	Dataset          string `json:"dataset" db:"dataset"`
	Status           string `json:"status" db:"status"`
	State            string `json:"state" db:"state"`
	MaxSteps         int    `json:"max_steps" db:"max_steps"`
	Steps            int    `json:"steps" db:"steps"`
	PromptTokens     int64  `json:"prompt_tokens" db:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens" db:"completion_tokens"`
	// CachedTokens is the part of PromptTokens the provider read from its
	// prompt cache; ReasoningTokens the part of CompletionTokens a
	// reasoning model spent thinking.
	CachedTokens    int64    `json:"cached_tokens" db:"cached_tokens"`
	ReasoningTokens int64    `json:"reasoning_tokens" db:"reasoning_tokens"`
	Tokens          int64    `json:"tokens" db:"tokens"`
	CostUSD         float64  `json:"cost_usd" db:"cost_usd"`
	MaxCostUSD      *float64 `json:"max_cost_usd,omitempty" db:"max_cost_usd"`
	MaxTokens       *int64   `json:"max_tokens,omitempty" db:"max_tokens"`
	// MaxSubagents bounds the sub-agents of the run's tree.
	MaxSubagents int `json:"max_subagents" db:"max_subagents"`
	// AgentType is a sub-agent's type ("" for a root).
	AgentType string `json:"agent_type,omitempty" db:"agent_type"`
	// Deadline is when a sub-agent's wall clock runs out (nil: no cap).
	Deadline *time.Time `json:"deadline,omitempty" db:"deadline"`
	// WaitNames and WaitCallID are what a parked wait_subagents waits
	// for and the call it answers; WaitKind says what the parked call
	// waits for (waitSubagents or waitMessages), WaitUntil when a message
	// wait ends, and WaitReadTo the newest message a resumed message wait
	// delivers. They mean something only while WaitCallID is set.
	WaitNames  []string   `json:"-" db:"wait_names"`
	WaitCallID string     `json:"-" db:"wait_call_id"`
	WaitKind   string     `json:"-" db:"wait_kind"`
	WaitUntil  *time.Time `json:"-" db:"wait_until"`
	WaitReadTo int64      `json:"-" db:"wait_read_to"`
	// Interactive says a root may ask its owner (ask_owner), and
	// AnswerTimeoutSeconds how long each question waits for an answer.
	Interactive          bool `json:"interactive" db:"interactive"`
	AnswerTimeoutSeconds int  `json:"answer_timeout_seconds,omitempty" db:"answer_timeout_s"`
	// Question and AnswerDeadline are the question a root parked on
	// ask_owner waits on and when it goes on without an answer; set only
	// while it waits (WaitsForAnswer).
	Question       string     `json:"question,omitempty" db:"question"`
	AnswerDeadline *time.Time `json:"answer_deadline,omitempty" db:"-"`
	// answer is what resumed the run's last question: the owner's text,
	// or nil when its deadline did.
	answer *string
	// ApprovePlan says a root must propose its sub-agents (propose_plan)
	// and have its owner approve them before it spawns; Plan is its last
	// plan and where it stands (nil before the first proposal).
	ApprovePlan bool  `json:"approve_plan" db:"approve_plan"`
	Plan        *Plan `json:"plan,omitempty" db:"-"`
	// planCallID is the id of the run's last propose_plan call.
	planCallID string
	Report     string `json:"report" db:"report"`
	// ProviderWait is what the run knows of its provider's outage while it
	// waits for it (state waiting_provider), and of the outage that ended
	// it; nil otherwise.
	ProviderWait *ProviderWait `json:"provider_wait,omitempty" db:"provider_wait"`
	// CitationsMode is what the research does with its report's citations
	// (citations.go); Citations the counts of the last check of the run's
	// report (nil before one), CitationsBefore those of the check before
	// the root revised it.
	CitationsMode   string       `json:"citations_mode" db:"citations_mode"`
	Citations       *cite.Counts `json:"citations" db:"citations"`
	CitationsBefore *cite.Counts `json:"citations_before,omitempty" db:"citations_before"`
	Error           string       `json:"error" db:"error"`
	// Pinned is the hash of the behaviour bundle the run's steps are made
	// with (behaviour.go); "" before its first step.
	Pinned string `json:"pinned" db:"pinned"`
	// ForkedFrom is the research this one was forked from (fork.go), and
	// ForkStep the step of that research's root it replayed up to;
	// ForkInstruction is what its owner told its first live step.
	ForkedFrom      *int64    `json:"forked_from,omitempty" db:"forked_from"`
	ForkStep        *int      `json:"fork_step,omitempty" db:"fork_step"`
	ForkInstruction string    `json:"fork_instruction,omitempty" db:"fork_instruction"`
	CreatedAt       time.Time `json:"created_at" db:"created_at"`
	// TreeStartedAt is when the run's tree started (its root's CreatedAt).
	TreeStartedAt time.Time  `json:"-" db:"tree_started_at"`
	StartedAt     *time.Time `json:"started_at" db:"started_at"`
	UpdatedAt     time.Time  `json:"updated_at" db:"updated_at"`
	EndedAt       *time.Time `json:"ended_at" db:"ended_at"`
	// rebuild, when set, is the bundle a step's request is rebuilt with
	// (step_request.go): the one that step recorded, whatever the pin.
	rebuild *behaviour
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
// owner, which an answer (Service.Answer) or its deadline resumes.
func (r *Run) WaitsForAnswer() bool {
	return r.Status == StatusWaiting && r.waitsForOwner() && r.WaitCallID != r.planCallID
}

// WaitsForPlan reports whether the run is parked on the plan it proposed,
// which its owner's decision (Service.DecidePlan) or its deadline resumes.
func (r *Run) WaitsForPlan() bool {
	return r.Status == StatusWaiting && r.waitsForOwner() && r.WaitCallID == r.planCallID
}

// IsRoot reports whether a user started the run (it has no parent).
func (r *Run) IsRoot() bool { return r.ParentID == nil }

// runColumns are the columns a Run is read from (scanRun), each named by
// a db tag of Run or of runRow.
const runColumns = `id, user_id, parent_id, root_id, depth, name, reason, topic, model, dataset,
	status, state, max_steps, steps, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens,
	tokens, cost_usd::float8,
	max_cost_usd::float8, max_tokens, max_subagents, agent_type, deadline, wait_names, wait_call_id,
	wait_kind, wait_until, wait_read_to, interactive, answer_timeout_s, question, answer,
	approve_plan, plan, plan_state, plan_note, plan_call_id, report, error,
	created_at, started_at, updated_at, ended_at, tree_started_at,
	citations_mode, citations, citations_before, provider_wait, coalesce(pinned, '') AS pinned,
	forked_from, fork_step, fork_instruction`

// runByIDSQL reads one run.
const runByIDSQL = "SELECT " + runColumns + " FROM gb_agent_research_runs WHERE id = $1"

// lockRunSQL reads one run and locks its row until the transaction ends.
const lockRunSQL = runByIDSQL + " FOR UPDATE"

// childrenSQL reads the sub-agents of a run, oldest first.
const childrenSQL = "SELECT " + runColumns + " FROM gb_agent_research_runs WHERE parent_id = $1 ORDER BY id"

// runRow is a row of runColumns: the run, beside the columns it keeps
// unexported (answer, plan_call_id) or reads into its Plan.
type runRow struct {
	Run
	Answer     *string `db:"answer"`
	PlanJSON   []byte  `db:"plan"`
	PlanState  string  `db:"plan_state"`
	PlanNote   string  `db:"plan_note"`
	PlanCallID string  `db:"plan_call_id"`
}

// scanRun reads the current row of a statement that returns runColumns,
// by column name.
func scanRun(row pgx.CollectableRow) (*Run, error) {
	rr, err := pgx.RowToAddrOfStructByName[runRow](row)
	if err != nil {
		return nil, fmt.Errorf("error reading run: %w", err)
	}
	r := &rr.Run
	r.answer, r.planCallID = rr.Answer, rr.PlanCallID
	if r.WaitsForAnswer() {
		r.AnswerDeadline = r.WaitUntil
	} else {
		r.Question = "" // a question shows only while it waits
	}
	if !r.Interactive && !r.ApprovePlan {
		r.AnswerTimeoutSeconds = 0
	}
	if r.Plan, err = readPlan(r, rr.PlanJSON, rr.PlanState, rr.PlanNote); err != nil {
		return nil, err
	}
	return r, nil
}

// oneRun is the first run of rows (the result of db.Query with err), a
// statement that returns runColumns; ErrNotFound when it returned none.
func oneRun(rows pgx.Rows, err error) (*Run, error) {
	if err != nil {
		return nil, fmt.Errorf("error reading run: %w", err)
	}
	r, err := pgx.CollectOneRow(rows, scanRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("error reading run: %w", err)
	}
	return r, nil
}

// GetRun loads a run by id, whoever owns it.
func GetRun(ctx context.Context, db DB, id int64) (*Run, error) {
	return oneRun(db.Query(ctx, runByIDSQL, id))
}

// lockRun loads a run and locks its row until the transaction ends.
func lockRun(ctx context.Context, tx pgx.Tx, id int64) (*Run, error) {
	return oneRun(tx.Query(ctx, lockRunSQL, id))
}

// lockTree locks the root of the run's tree, then the run itself
// (lockTreeSQL): the order every writer of a tree takes, so that a tree's
// writers queue on its root and its event numbers follow its commits. It
// returns the run as locked, or nil when the run is gone.
func (a *Service) lockTree(ctx context.Context, tx pgx.Tx, run *Run) (*Run, error) {
	b := &pgx.Batch{}
	locked := queueLockTree(b, run)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return *locked, nil
}

// queueLockTree queues on b lockTree's statement for run, to go with
// others in one round trip: once b ran, *locked is the run as locked, or
// nil when it is gone.
func queueLockTree(b *pgx.Batch, run *Run) (locked **Run) {
	locked = new(*Run)
	b.Queue(lockTreeSQL, []int64{run.RootID, run.ID}).Query(func(rows pgx.Rows) error {
		runs, err := pgx.AppendRows([]*Run(nil), rows, scanRun)
		if err != nil {
			return fmt.Errorf("error locking tree %d: %w", run.RootID, err)
		}
		for _, r := range runs {
			if r.ID == run.ID {
				*locked = r
			}
		}
		return nil
	})
	return locked
}

// lockTreeByID locks the tree of the run id, then the run (lockTree),
// after reading the run unlocked for its root. It returns nil when the run
// is gone.
func (a *Service) lockTreeByID(ctx context.Context, tx pgx.Tx, id int64) (*Run, error) {
	seen, err := GetRun(ctx, tx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return a.lockTree(ctx, tx, seen)
}

// children lists the sub-agents of a run, oldest first.
func children(ctx context.Context, db DB, parentID int64) ([]*Run, error) {
	return queryRuns(ctx, db, childrenSQL, parentID)
}

// queryRuns runs sql, a statement that returns runColumns, and reads its
// runs in order (nil when there are none).
func queryRuns(ctx context.Context, db DB, sql string, args ...any) ([]*Run, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("error querying runs: %w", err)
	}
	runs, err := pgx.AppendRows([]*Run(nil), rows, scanRun)
	if err != nil {
		return nil, fmt.Errorf("error querying runs: %w", err)
	}
	return runs, nil
}

// addStateSQL adds a row to a run's state history: the run entered
// @state at @step. It is the history's one insert on its own; two
// statements insert a row in the same statement as the change of the run
// it records (admitFirstSQL, setStateSQL), and recordStepSQL keeps a
// step's states on the step's row (statesSQL reads both).
const addStateSQL = `INSERT INTO gb_agent_research_states (run_id, state, step) VALUES (@run, @state, @step)`

// stateArgs are addStateSQL's arguments, for a batch (pgx.Batch.Queue).
func stateArgs(runID int64, state string, step int) pgx.NamedArgs {
	return pgx.NamedArgs{"run": runID, "state": state, "step": step}
}

// addState adds a row to a run's state history (addStateSQL) in db, the
// caller's transaction, which changes the run's state itself.
func addState(ctx context.Context, db DB, runID int64, state string, step int) error {
	if _, err := db.Exec(ctx, addStateSQL, stateArgs(runID, state, step)); err != nil {
		return fmt.Errorf("error recording state %s of run %d: %w", state, runID, err)
	}
	return nil
}

// setStateSQL sets a going run's state to @state, if it is in another
// one, and adds the change to its state history at @step.
const setStateSQL = `WITH u AS (
		UPDATE gb_agent_research_runs SET state = @state, updated_at = now()
		WHERE id = @run AND status NOT IN ('succeeded', 'failed', 'timed_out') AND state <> @state
		RETURNING id)
	INSERT INTO gb_agent_research_states (run_id, state, step) SELECT id, @state, @step FROM u`

// setState records a state change of a run: its current state and a row of
// its history (setStateSQL). It runs on its own so progress shows while a
// step works.
func setState(ctx context.Context, db DB, runID int64, state string, step int) error {
	if _, err := db.Exec(ctx, setStateSQL, stateArgs(runID, state, step)); err != nil {
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

// statesSQL reads a run's state history, oldest first: the rows of
// gb_agent_research_states and the states its steps went through, kept on
// the steps' rows (migration 031), in the order they were written (every
// writer of a run holds its tree's lock, and each takes its
// clock_timestamp() under it).
const statesSQL = `SELECT state, step, at FROM (
		SELECT state, step, at, 0::bigint AS o FROM gb_agent_research_states WHERE run_id = $1
		UNION ALL
		SELECT u.s, u.n, st.created_at, u.o FROM gb_agent_research_steps st,
			unnest(st.states, st.state_steps) WITH ORDINALITY AS u(s, n, o)
		WHERE st.run_id = $1) h
	ORDER BY at, o`

// States returns a run's state history, oldest first.
func States(ctx context.Context, db DB, runID int64) ([]StateChange, error) {
	rows, err := db.Query(ctx, statesSQL, runID)
	if err != nil {
		return nil, fmt.Errorf("error reading states: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[StateChange])
}
