package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/kb"
)

// A root research starts in one transaction: its BEGIN, the user locked,
// the start's limits read and the run inserted with its first state, its
// first event and the trees whose notes it reads (one batch; insertRootSQL
// inserts only what the limits allow), its first step job inserted
// (River's insert and its notification), and the commit. A start that
// reads the notes of other trees checks that the user owns them first,
// and inserts its run in a round trip of its own.

// lockUserSQL locks the user, so that the user's starts count working
// researches one at a time, and reads the user's sub-agent bound and
// webhook.
const lockUserSQL = "SELECT max_subagents, webhook_url FROM gb_users WHERE id = $1 FOR NO KEY UPDATE"

// startLimitsSQL reads, once the user is locked (a statement after the
// lock sees every start the lock waited for), whether the dataset exists
// and how many of the user's researches are still going.
const startLimitsSQL = `SELECT EXISTS (SELECT 1 FROM gb_kb_datasets WHERE name = $2),
	(SELECT count(*) FROM gb_agent_research_runs
	 WHERE user_id = $1 AND parent_id IS NULL AND status IN ('queued', 'working', 'waiting'))`

// started is what a start read before it inserts the run.
type started struct {
	userLimit   *int
	userWebhook *string
	dataset     bool
	working     int
	existing    *Run // the run the schedule key started already
}

// startChecks locks the user and reads what the start is checked
// against, in one round trip, in tx (queueStartChecks).
func startChecks(ctx context.Context, tx pgx.Tx, p StartParams) (*started, error) {
	b := &pgx.Batch{}
	c := queueStartChecks(b, p, nil)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return c, nil
}

// queueStartChecks queues on b the lock of the user and the reads of what
// the start is checked against; insert, when not nil, queues the run's
// insert after them. Once b ran, the started holds what they read.
func queueStartChecks(b *pgx.Batch, p StartParams, insert func(*pgx.Batch)) *started {
	c := &started{}
	b.Queue(lockUserSQL, p.UserID).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&c.userLimit, &c.userWebhook); err != nil {
			return fmt.Errorf("error locking user: %w", err)
		}
		return nil
	})
	if p.ScheduleKey != "" {
		b.Queue(runByScheduleKeySQL, p.ScheduleKey).Query(func(rows pgx.Rows) error {
			run, err := oneRun(rows, nil)
			if errors.Is(err, ErrNotFound) {
				return nil
			}
			c.existing = run
			return err
		})
	}
	b.Queue(startLimitsSQL, p.UserID, p.Dataset).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&c.dataset, &c.working); err != nil {
			return fmt.Errorf("error reading the limits of a start: %w", err)
		}
		return nil
	})
	if insert != nil {
		insert(b)
	}
	return c
}

// check refuses a start its limits do not allow: an unknown dataset, a
// notes_from the user does not own, or too many researches going.
func (c *started) check(ctx context.Context, tx pgx.Tx, p StartParams) error {
	if !c.dataset {
		names, _ := kb.Datasets(ctx, tx)
		return &FieldError{"dataset", fmt.Sprintf("unknown dataset %q; available: %s", p.Dataset, strings.Join(names, ", "))}
	}
	if err := checkNotesFromOwned(ctx, tx, p.UserID, p.NotesFrom); err != nil {
		return err
	}
	if c.working >= MaxWorkingPerUser {
		return ErrTooManyWorking
	}
	return nil
}

// insertRootSQL inserts a root research, queued, with its first state,
// its first event and the trees whose notes it reads, if the start's
// limits allow it (with the user locked, a statement of its own sees every
// start the lock waited for): the dataset exists, the user has fewer than
// @max_working researches going, and no run has the schedule key. Its
// sub-agent bound is @max_subagents held to the user's, and its webhook
// the user's when the start names none. Its root_id is left out: the
// gb_runs_root_default trigger sets it to the new id, so this statement
// calls no sequence function (which would pin an RDS Proxy session). A
// budget, schedule key, webhook or trace context given as zero or empty
// is stored as NULL. It returns no row when the limits refused the run.
const insertRootSQL = `WITH run AS (
		INSERT INTO gb_agent_research_runs (user_id, topic, model, dataset, max_steps,
			max_cost_usd, max_tokens, schedule_key, max_subagents, webhook_url, interactive, answer_timeout_s,
			approve_plan, citations_mode, traceparent, trace_parent_id)
		SELECT u.id, @topic, @model, @dataset, @max_steps, nullif(@max_cost_usd::float8, 0),
			nullif(@max_tokens::bigint, 0), nullif(@schedule_key, ''),
			greatest(least(@max_subagents::int, coalesce(u.max_subagents, @max_subagents::int)), 0),
			nullif(coalesce(nullif(@webhook_url, ''), u.webhook_url), ''),
			@interactive, @answer_timeout_s, @approve_plan, @citations_mode, nullif(@traceparent, ''),
			nullif(@trace_parent_id, '')
		FROM gb_users u
		WHERE u.id = @user AND EXISTS (SELECT 1 FROM gb_kb_datasets WHERE name = @dataset)
			AND (SELECT count(*) FROM gb_agent_research_runs WHERE user_id = @user AND parent_id IS NULL
				AND status IN ('queued', 'working', 'waiting')) < @max_working
			AND (nullif(@schedule_key, '') IS NULL
				OR NOT EXISTS (SELECT 1 FROM gb_agent_research_runs WHERE schedule_key = @schedule_key))
		RETURNING *),
	notes AS (
		INSERT INTO gb_kb_notes_from (tree_id, from_tree_id)
		SELECT run.id, f FROM run, unnest(@notes_from::bigint[]) f WHERE f <> run.id ON CONFLICT DO NOTHING),
	state AS (
		INSERT INTO gb_agent_research_states (run_id, state, step) SELECT id, '` + StateQueued + `', 0 FROM run),
	event AS (
		INSERT INTO gb_agent_research_events (root_id, run_id, parent_id, kind, data)
		SELECT root_id, id, parent_id, '` + EventQueued + `', @event::jsonb FROM run)
	SELECT ` + runColumns + ` FROM run`

// insertRootArgs are insertRootSQL's arguments for the start p, with the
// sub-agent bound maxSubagents before the user's.
func (a *Service) insertRootArgs(ctx context.Context, p StartParams, maxSubagents int) (pgx.NamedArgs, error) {
	event, err := json.Marshal(map[string]any{"topic": oneLine(p.Topic, 200)})
	if err != nil {
		return nil, fmt.Errorf("error encoding event: %w", err)
	}
	traceparent, traceParentID := a.runTrace(ctx)
	notesFrom := p.NotesFrom
	if notesFrom == nil {
		notesFrom = []int64{}
	}
	return pgx.NamedArgs{
		"user": p.UserID, "topic": p.Topic, "model": a.model.Name(), "dataset": p.Dataset,
		"max_steps": p.MaxSteps, "max_cost_usd": p.MaxCostUSD, "max_tokens": p.MaxTokens,
		"schedule_key": p.ScheduleKey, "max_subagents": maxSubagents, "webhook_url": p.WebhookURL,
		"interactive": p.Interactive, "answer_timeout_s": cmp.Or(p.AnswerTimeoutSeconds, DefaultAnswerTimeoutSeconds),
		"approve_plan": p.ApprovePlan, "citations_mode": a.citationsModeFor(p.Citations),
		"traceparent": traceparent, "trace_parent_id": traceParentID, "notes_from": notesFrom, "event": string(event),
		"max_working": MaxWorkingPerUser}, nil
}

// errStartRefused is the error of a root's insert that its limits refused
// although the start's checks passed.
var errStartRefused = errors.New("the research was not inserted: its limits changed while it started")

// queueInsertRoot queues on b the insert of the root research p starts
// (insertRootSQL, with args from insertRootArgs); once the batch ran, *run
// is the run, or nil when its limits refused it.
func queueInsertRoot(b *pgx.Batch, args pgx.NamedArgs, run **Run) {
	b.Queue(insertRootSQL, args).Query(func(rows pgx.Rows) error {
		r, err := oneRun(rows, nil)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		*run = r
		return err
	})
}

// insertRoot inserts the root research p starts (insertRootSQL), in tx.
func (a *Service) insertRoot(ctx context.Context, tx pgx.Tx, p StartParams, maxSubagents int) (*Run, error) {
	args, err := a.insertRootArgs(ctx, p, maxSubagents)
	if err != nil {
		return nil, err
	}
	run, err := oneRun(tx.Query(ctx, insertRootSQL, args))
	if errors.Is(err, ErrNotFound) {
		return nil, errStartRefused
	}
	if err != nil {
		return nil, fmt.Errorf("error inserting research: %w", err)
	}
	return run, nil
}
