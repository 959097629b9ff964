package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Limits of a research a user starts.
const (
	// MaxWorkingPerUser is how many root researches one user may have
	// queued, working or waiting at once. Sub-agents do not count.
	MaxWorkingPerUser = 3
	// MaxTopicLen bounds a research topic, in characters.
	MaxTopicLen = 2000
	// DefaultDataset is the knowledge base a research uses when it names none.
	DefaultDataset = "godoc"
)

// ErrTooManyWorking is returned when a user already has MaxWorkingPerUser
// researches working.
var ErrTooManyWorking = fmt.Errorf("you already have %d researches working, the most allowed at once; "+
	"wait for one to end or cancel one", MaxWorkingPerUser)

// ErrTreeWorking is returned when a sub-agent is deleted while its research
// works: its usage still counts toward the research's budget and limits.
var ErrTreeWorking = errors.New("a sub-agent of a working research cannot be deleted (its usage counts toward the research's budget); cancel it instead, or delete the whole research")

// FieldError is invalid input, naming the field and what is allowed.
type FieldError struct {
	Field string
	Msg   string
}

// Error names the field and what it allows.
func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// StartParams are the inputs of a new root research.
type StartParams struct {
	UserID     int64
	Topic      string
	MaxSteps   int
	Dataset    string
	MaxCostUSD float64
	MaxTokens  int64
	// ScheduleKey makes the start idempotent: a second start with the same
	// key returns the first run instead of creating one.
	ScheduleKey string
	// WebhookURL is notified when the research ends (webhook.go); ""
	// means the user's default, if any.
	WebhookURL string
	// Interactive gives the root the tool ask_owner (owner_wait.go), and
	// AnswerTimeoutSeconds is how long each of its questions waits for an
	// answer (0: DefaultAnswerTimeoutSeconds).
	Interactive          bool
	AnswerTimeoutSeconds int
	// ApprovePlan makes the root propose the sub-agents it means to spawn
	// (propose_plan) and wait for its owner's approval before it spawns
	// any (plan.go); AnswerTimeoutSeconds bounds that wait too.
	ApprovePlan bool
	// Citations is what the research does with its report's citations:
	// off, flag or revise (citations.go); "" is the agent's default.
	Citations string
	// NotesFrom names earlier researches of the same user (root run
	// ids) whose notes this one's agents see with its own: by default a
	// research sees only the notes of its own tree.
	NotesFrom []int64
}

// MaxNotesFrom bounds the researches a research reads notes from.
const MaxNotesFrom = 20

// Validate checks the inputs and fills the defaults. Every edge that starts
// researches (the API, the scheduler) shares these checks: text is valid
// UTF-8 with no NUL, and lengths are counted in characters (runes).
func (p *StartParams) Validate() error {
	// maxDatasetLen bounds a dataset name, in characters.
	const maxDatasetLen = 100
	p.Topic = strings.TrimSpace(p.Topic)
	switch n := utf8.RuneCountInString(p.Topic); {
	case !utf8.ValidString(p.Topic):
		return &FieldError{"topic", "must be valid UTF-8 text"}
	case n == 0:
		return &FieldError{"topic", fmt.Sprintf("is required: the question to research, 1 to %d characters", MaxTopicLen)}
	case n > MaxTopicLen:
		return &FieldError{"topic", fmt.Sprintf("is %d characters; at most %d are allowed", n, MaxTopicLen)}
	case strings.ContainsRune(p.Topic, 0):
		return &FieldError{"topic", "must not contain NUL characters"}
	}
	if p.MaxSteps == 0 {
		p.MaxSteps = DefaultMaxSteps
	}
	if p.MaxSteps < 1 || p.MaxSteps > MaxMaxSteps {
		return &FieldError{"max_steps", fmt.Sprintf("must be between 1 and %d (got %d)", MaxMaxSteps, p.MaxSteps)}
	}
	switch n := utf8.RuneCountInString(p.Dataset); {
	case !utf8.ValidString(p.Dataset):
		return &FieldError{"dataset", "must be valid UTF-8 text"}
	case n > maxDatasetLen:
		return &FieldError{"dataset", fmt.Sprintf("is %d characters; a dataset name has at most %d", n, maxDatasetLen)}
	case strings.ContainsRune(p.Dataset, 0):
		return &FieldError{"dataset", "must not contain NUL characters"}
	case n == 0:
		p.Dataset = DefaultDataset
	}
	if !(p.MaxCostUSD >= 0 && p.MaxCostUSD <= 1000) { // NaN too
		return &FieldError{"max_cost_usd", "must be between 0 (no budget) and 1000"}
	}
	if p.MaxTokens < 0 {
		return &FieldError{"max_tokens", "must be 0 (no budget) or more"}
	}
	if err := p.checkAsk(); err != nil {
		return err
	}
	if err := checkCitationsMode("citations", p.Citations); err != nil {
		return err
	}
	if err := p.checkNotesFrom(); err != nil {
		return err
	}
	return ValidateWebhookURL("webhook_url", p.WebhookURL)
}

// StartResearch validates p and, in one transaction with the user's row
// locked, checks the per-user limit and inserts the root run and its first
// step job. created is false when ScheduleKey matched an existing run.
func (a *Service) StartResearch(ctx context.Context, p StartParams) (run *Run, created bool, err error) {
	if err := p.Validate(); err != nil {
		return nil, false, err
	}
	if p.MaxCostUSD == 0 {
		p.MaxCostUSD = a.config.MaxCostUSD
	}
	if p.MaxTokens == 0 {
		p.MaxTokens = a.config.MaxTokens
	}
	if err := a.checkBudget(p); err != nil {
		return nil, false, err
	}
	if err := a.checkWebhookURL(ctx, "webhook_url", p.WebhookURL); err != nil {
		return nil, false, err
	}
	// A start that reads no other tree's notes inserts its run in the
	// batch of its checks; insertRootSQL inserts only what they allow.
	var insert func(*pgx.Batch)
	var inserted *Run
	if len(p.NotesFrom) == 0 {
		args, err := a.insertRootArgs(ctx, p, a.subagentLimit(nil))
		if err != nil {
			return nil, false, err
		}
		insert = func(b *pgx.Batch) { queueInsertRoot(b, args, &inserted) }
	}
	var c *started
	checks := func(b *pgx.Batch) { c = queueStartChecks(b, p, insert) }
	err = beginBatch(ctx, a.pool, checks, func(tx pgx.Tx) error {
		var err error
		if c.existing != nil {
			run = c.existing // the schedule key's run, started before
			return nil
		}
		if err := c.check(ctx, tx, p); err != nil {
			return err
		}
		if run = inserted; run == nil {
			if insert != nil {
				return errStartRefused // the checks passed, the insert's own did not
			}
			if p.WebhookURL == "" && c.userWebhook != nil {
				p.WebhookURL = *c.userWebhook
			}
			if run, err = a.insertRoot(ctx, tx, p, a.subagentLimit(c.userLimit)); err != nil {
				return err
			}
		}
		created = true
		return a.enqueueStep(ctx, tx, run, 1)
	})
	if err != nil {
		return nil, false, err
	}
	return run, created, nil
}

// GetForUser returns a run the user owns.
func GetForUser(ctx context.Context, db DB, userID, id int64) (*Run, error) {
	run, err := GetRun(ctx, db, id)
	if err != nil {
		return nil, err
	}
	if run.UserID != userID {
		return nil, ErrNotFound
	}
	return run, nil
}

// StatusActive, as the Status of ListParams, lists the runs that have not
// ended: queued, working or waiting.
const StatusActive = "active"

// ListStatuses are the values the Status of ListParams may take besides ""
// (every run): a run status, or StatusActive.
var ListStatuses = []string{StatusActive, StatusQueued, StatusWorking, StatusWaiting, StatusSucceeded, StatusFailed, StatusTimedOut}

// ListLimitDefault and MaxListLimit are the default and the largest number
// of runs of a page of List.
const (
	ListLimitDefault = 20
	MaxListLimit     = 100
)

// ListParams select and page a user's runs, newest first.
type ListParams struct {
	UserID   int64
	ParentID *int64
	// Status is "" (every run), a run status or StatusActive.
	Status string
	// Before is a cursor: only runs with a smaller id are listed.
	Before int64
	Limit  int
}

// List returns a page of the user's runs and the cursor of the next page
// (0 when there is none).
func List(ctx context.Context, db DB, p ListParams) ([]*Run, int64, error) {
	if p.Limit <= 0 || p.Limit > MaxListLimit {
		p.Limit = ListLimitDefault
	}
	runs, err := queryRuns(ctx, db, "SELECT "+runColumns+` FROM gb_agent_research_runs
		WHERE user_id = $1 AND ($2::bigint IS NULL OR parent_id = $2) AND ($3 = '' OR status = $3
		       OR ($3 = 'active' AND status IN ('queued', 'working', 'waiting')))
		  AND ($4::bigint = 0 OR id < $4::bigint)
		ORDER BY id DESC LIMIT $5`, p.UserID, p.ParentID, p.Status, p.Before, p.Limit+1)
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(runs) > p.Limit {
		runs = runs[:p.Limit]
		next = runs[len(runs)-1].ID
	}
	return runs, next, nil
}

// Tree returns every run of the tree a run belongs to, by depth then id.
func Tree(ctx context.Context, db DB, rootID int64) ([]*Run, error) {
	return queryRuns(ctx, db, "SELECT "+runColumns+` FROM gb_agent_research_runs
		WHERE root_id = $1 ORDER BY depth, id`, rootID)
}

// Subtree returns a run and its descendants.
func Subtree(ctx context.Context, db DB, id int64) ([]*Run, error) {
	return queryRuns(ctx, db, `WITH RECURSIVE t AS (
			SELECT id FROM gb_agent_research_runs WHERE id = $1
			UNION ALL SELECT r.id FROM gb_agent_research_runs r JOIN t ON r.parent_id = t.id)
		SELECT `+runColumns+` FROM gb_agent_research_runs WHERE id IN (SELECT id FROM t) ORDER BY depth, id`, id)
}

// lockOwned locks the tree of a run the user owns, then the run.
func (a *Service) lockOwned(ctx context.Context, tx pgx.Tx, userID, id int64) (*Run, error) {
	seen, err := GetForUser(ctx, tx, userID, id)
	if err != nil {
		return nil, err
	}
	run, err := a.lockTree(ctx, tx, seen)
	if err == nil && run == nil {
		err = ErrNotFound
	}
	return run, err
}

// Cancel ends a run the user owns and its descendants, as failed with
// "cancelled by its owner"; its parent, if parked on it, resumes.
func (a *Service) Cancel(ctx context.Context, userID, id int64) (*Run, error) {
	var out *Run
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		run, err := a.lockOwned(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		if !run.Ended() {
			if err := a.endRun(ctx, tx, run, StatusFailed, "", "cancelled by its owner", 0); err != nil {
				return err
			}
		}
		out, err = GetRun(ctx, tx, id)
		return err
	})
	return out, err
}

// Delete deletes a run the user owns with its sub-agents, their messages,
// steps, states, events and model calls, and their jobs.
func (a *Service) Delete(ctx context.Context, userID, id int64) error {
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		run, err := a.lockOwned(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		if !run.IsRoot() {
			root, err := GetRun(ctx, tx, run.RootID)
			if err != nil {
				return err
			}
			if !root.Ended() {
				return ErrTreeWorking
			}
		}
		tree, err := Subtree(ctx, tx, id)
		if err != nil {
			return err
		}
		ids := make([]int64, len(tree))
		for i, r := range tree {
			ids[i] = r.ID
		}
		if err := a.cancelJobs(ctx, tx, ids, 0); err != nil {
			return err
		}
		// Through the messenger, so that a reader waiting on an inbox wakes
		// at once; the rest (steps, states, events, messages to these
		// runs) goes with the runs, by cascade.
		for _, rid := range ids {
			if err := a.closeInbox(ctx, tx, rid); err != nil {
				return err
			}
		}
		// The messages these runs sent (no foreign key holds them), then the
		// run: its sub-agents and what refers to them go with it, by cascade.
		if _, err := tx.Exec(ctx, "DELETE FROM gb_messages WHERE from_id = ANY($1)", ids); err != nil {
			return fmt.Errorf("error deleting messages: %w", err)
		}
		if _, err := tx.Exec(ctx, "DELETE FROM gb_agent_research_runs WHERE id = $1", id); err != nil {
			return fmt.Errorf("error deleting run %d: %w", id, err)
		}
		if run.ParentID != nil {
			return a.maybeResume(ctx, tx, *run.ParentID)
		}
		return nil
	})
}

// subagentLimit is how many sub-agents a new tree of a user may have: the
// spec's ceiling, lowered by the server's setting and the user's own.
func (a *Service) subagentLimit(user *int) int {
	n := MaxSubagentsPerTree
	if a.config.MaxSubagents != nil {
		n = min(n, *a.config.MaxSubagents)
	}
	if user != nil {
		n = min(n, *user)
	}
	return max(n, 0)
}

// SetUserMaxSubagents sets how many sub-agents the user's new researches
// may have (0: none, so roots get no spawning tools; nil: the server's
// setting). Researches already started keep their bound.
func SetUserMaxSubagents(ctx context.Context, db DB, name string, n *int) error {
	if n != nil && (*n < 0 || *n > MaxSubagentsPerTree) {
		return &FieldError{"max_subagents", fmt.Sprintf("must be 0 (no sub-agents) to %d", MaxSubagentsPerTree)}
	}
	tag, err := db.Exec(ctx, "UPDATE gb_users SET max_subagents = $2 WHERE name = $1", name, n)
	if err != nil {
		return fmt.Errorf("error setting the sub-agents of user %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("no user named %q", name)
	}
	return nil
}

// checkNotesFrom drops repeated ids of NotesFrom and checks their number
// and that each is a run id.
func (p *StartParams) checkNotesFrom() error {
	seen := map[int64]bool{}
	ids := p.NotesFrom[:0:0]
	for _, id := range p.NotesFrom {
		if id <= 0 {
			return &FieldError{"notes_from", fmt.Sprintf("takes the ids of your earlier researches (root runs); %d is not a run id", id)}
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) > MaxNotesFrom {
		return &FieldError{"notes_from", fmt.Sprintf("names %d researches; at most %d are allowed", len(ids), MaxNotesFrom)}
	}
	p.NotesFrom = ids
	return nil
}

// checkNotesFromOwned checks that every id of notes_from is a root
// research of the user: a run of another user is not found, as
// everywhere, and a sub-agent is named with its root.
func checkNotesFromOwned(ctx context.Context, tx pgx.Tx, userID int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT i.id, r.root_id FROM unnest($1::bigint[]) WITH ORDINALITY AS i (id, n)
		LEFT JOIN gb_agent_research_runs r ON r.id = i.id AND r.user_id = $2 ORDER BY i.n`, ids, userID)
	if err != nil {
		return fmt.Errorf("error checking notes_from: %w", err)
	}
	type found struct {
		id   int64
		root *int64
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (found, error) {
		var f found
		return f, r.Scan(&f.id, &f.root)
	})
	if err != nil {
		return fmt.Errorf("error checking notes_from: %w", err)
	}
	for _, f := range runs {
		switch {
		case f.root == nil:
			return &FieldError{"notes_from", fmt.Sprintf("run %d is not one of your researches; name the ids of your own earlier researches (gb research list)", f.id)}
		case *f.root != f.id:
			return &FieldError{"notes_from", fmt.Sprintf("run %d is a sub-agent; name its research, run %d, whose notes its agents share", f.id, *f.root)}
		}
	}
	return nil
}
