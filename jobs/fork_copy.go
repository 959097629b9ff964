package jobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// This file writes a fork (fork.go): its root, and what it copies of its
// original's record.

// insertForkSQL inserts a fork's root from its original's row: the topic,
// dataset, sub-agent bound, webhook and owner settings as they were, the
// settings the fork changes, its steps so far (those it replays), the
// plan where the replayed steps decided it, the pin unless the fork takes
// the deploy's bundle; with its first state, its first event and the
// trees whose notes the original reads.
const insertForkSQL = `WITH run AS (
		INSERT INTO gb_agent_research_runs (user_id, topic, model, dataset, max_steps, max_cost_usd, max_tokens,
			max_subagents, webhook_url, interactive, answer_timeout_s, approve_plan, plan, plan_state, plan_note,
			plan_call_id, citations_mode, traceparent, trace_parent_id, steps, pinned, forked_from, fork_step,
			fork_instruction)
		SELECT o.user_id, o.topic, @model, o.dataset, @max_steps, nullif(@max_cost_usd::float8, 0),
			nullif(@max_tokens::bigint, 0), o.max_subagents, o.webhook_url, o.interactive, o.answer_timeout_s,
			o.approve_plan, CASE WHEN @plan_decided THEN o.plan END, CASE WHEN @plan_decided THEN o.plan_state ELSE '' END,
			CASE WHEN @plan_decided THEN o.plan_note ELSE '' END, CASE WHEN @plan_decided THEN o.plan_call_id ELSE '' END,
			@citations_mode, nullif(@traceparent, ''), nullif(@trace_parent_id, ''), @step,
			CASE WHEN @keep_pin THEN o.pinned END, o.id, @step, @instruction
		FROM gb_agent_research_runs o WHERE o.id = @orig
		RETURNING *),
	notes AS (
		INSERT INTO gb_kb_notes_from (tree_id, from_tree_id)
		SELECT run.id, f.from_tree_id FROM run, gb_kb_notes_from f WHERE f.tree_id = @orig ON CONFLICT DO NOTHING),
	state AS (
		INSERT INTO gb_agent_research_states (run_id, state, step) SELECT id, '` + StateQueued + `', @step FROM run),
	event AS (
		INSERT INTO gb_agent_research_events (root_id, run_id, parent_id, kind, data)
		SELECT root_id, id, parent_id, '` + EventQueued + `', @event::jsonb FROM run)
	SELECT ` + runColumns + ` FROM run`

// insertFork inserts the fork's root.
func (a *Service) insertFork(ctx context.Context, tx pgx.Tx, orig *Run, p ForkParams, sp StartParams, plan *forkPlan) (*Run, error) {
	event, err := json.Marshal(map[string]any{"topic": oneLine(orig.Topic, 200), "forked_from": orig.ID, "fork_step": p.Step})
	if err != nil {
		return nil, fmt.Errorf("error encoding event: %w", err)
	}
	model := p.Model
	if model == "" {
		model = orig.Model
	}
	traceparent, traceParentID := a.runTrace(ctx)
	fork, err := oneRun(tx.Query(ctx, insertForkSQL, pgx.NamedArgs{
		"orig": orig.ID, "model": model, "max_steps": sp.MaxSteps, "max_cost_usd": sp.MaxCostUSD, "max_tokens": sp.MaxTokens,
		"plan_decided": plan.planDecided, "citations_mode": a.citationsModeFor(sp.Citations), "traceparent": traceparent,
		"trace_parent_id": traceParentID, "step": p.Step, "keep_pin": p.Pin != PinLatest, "instruction": p.Instruction,
		"event": string(event)}))
	if err != nil {
		return nil, fmt.Errorf("error inserting the fork of research %d: %w", orig.ID, err)
	}
	return fork, nil
}

// replayFork copies the original's record into the fork (its root's steps
// up to the fork's, their sources, events and notes; the sub-agents whose
// result was read), spawns anew the sub-agents whose result was not, and
// gives the fork its way forward: parked on step N's wait, or its next
// step's job.
func (a *Service) replayFork(ctx context.Context, tx pgx.Tx, orig, fork *Run, p ForkParams, plan *forkPlan, steps []recordedStep) error {
	copied := &forkMap{old: []int64{orig.ID}, new: []int64{fork.ID}, parent: []*int64{nil}}
	children, err := queryRuns(ctx, tx, childrenSQL, orig.ID)
	if err != nil {
		return err
	}
	byName := map[string]*Run{}
	for _, c := range children {
		byName[c.Name] = c
	}
	var live []*Run
	for _, name := range plan.spawned {
		c := byName[name]
		if c == nil {
			continue // the spawn was refused
		}
		if plan.read[name] && c.Ended() {
			if err := a.copySubtree(ctx, tx, c, fork, copied); err != nil {
				return err
			}
			continue
		}
		live = append(live, c)
	}
	if err := copyRecord(ctx, tx, orig, fork, p.Step, plan, copied); err != nil {
		return err
	}
	for _, c := range live {
		sp := SpawnParams{Name: c.Name, Reason: c.Reason, Task: c.Topic, MaxSteps: c.MaxSteps, Type: c.AgentType}
		if c.Model != orig.Model {
			sp.Model = c.Model
		}
		if _, err := a.spawn(ctx, tx, fork, sp); err != nil {
			return fmt.Errorf("error spawning sub-agent %s of the fork anew: %w", c.Name, err)
		}
	}
	if plan.parkCallID == "" {
		return a.enqueueStep(ctx, tx, fork, p.Step+1)
	}
	return a.park(ctx, tx, fork, &parkRequest{callID: plan.parkCallID, names: plan.parkNames})
}

// forkMap pairs the runs a fork copied with their copies (and the copies'
// parents), for the statements that copy what refers to them.
type forkMap struct {
	old, new []int64
	parent   []*int64
}

// copyRunSQL copies an ended run of the original into the fork: the same
// row under a new id, parent and root, with no usage (the fork paid for
// none of it), no schedule key, webhook or trace of its own.
const copyRunSQL = `INSERT INTO gb_agent_research_runs
	SELECT (jsonb_populate_record(r, jsonb_build_object(
		'id', nextval(pg_get_serial_sequence('gb_agent_research_runs', 'id')), 'parent_id', @parent::bigint,
		'root_id', @root::bigint, 'prompt_tokens', 0, 'completion_tokens', 0, 'cached_tokens', 0,
		'reasoning_tokens', 0, 'tokens', 0, 'cost_usd', 0, 'schedule_key', NULL, 'webhook_url', NULL,
		'traceparent', NULL, 'trace_parent_id', NULL, 'tree_started_at', @tree_started_at::timestamptz,
		'created_at', now(), 'updated_at', now()))).*
	FROM gb_agent_research_runs r WHERE r.id = @old
	RETURNING id`

// copySubtree copies an ended sub-agent of the original and its own
// sub-agents under the fork, with closed inboxes as ended runs have.
func (a *Service) copySubtree(ctx context.Context, tx pgx.Tx, child, fork *Run, copied *forkMap) error {
	runs, err := Subtree(ctx, tx, child.ID)
	if err != nil {
		return err
	}
	ids := map[int64]int64{*child.ParentID: fork.ID}
	for _, r := range runs {
		parent := ids[*r.ParentID]
		var id int64
		if err := tx.QueryRow(ctx, copyRunSQL, pgx.NamedArgs{"old": r.ID, "parent": parent, "root": fork.ID,
			"tree_started_at": fork.TreeStartedAt}).Scan(&id); err != nil {
			return fmt.Errorf("error copying sub-agent %d into the fork: %w", r.ID, err)
		}
		ids[r.ID] = id
		copied.old, copied.new, copied.parent = append(copied.old, r.ID), append(copied.new, id), append(copied.parent, &parent)
		if err := a.openInbox(ctx, tx, id); err != nil {
			return err
		}
		if err := a.closeInbox(ctx, tx, id); err != nil {
			return err
		}
	}
	return nil
}

// copyRecordSQL copies what the fork replays, for every copied run (the
// root up to step @step, the copied sub-agents whole): the steps, marked
// replayed and with no usage; the sources; the events but the root's
// first (the fork has its own), marked replayed; and the notes written up
// to when step @step was recorded, with their passages.
const copyRecordSQL = `WITH m AS (
		SELECT * FROM unnest(@old::bigint[], @new::bigint[], @parent::bigint[]) AS m (old, new, parent)),
	steps AS (
		INSERT INTO gb_agent_research_steps (run_id, step, messages, created_at, model, started_at, model_ms, tool_ms,
			retries, retry_outcomes, compaction, version, behaviour, states, state_steps, replayed)
		SELECT m.new, s.step, s.messages, s.created_at, s.model, s.started_at, s.model_ms, s.tool_ms, s.retries,
			s.retry_outcomes, s.compaction, s.version, s.behaviour, s.states, s.state_steps, true
		FROM gb_agent_research_steps s JOIN m ON s.run_id = m.old
		WHERE m.old <> @orig OR s.step <= @step),
	sources AS (
		INSERT INTO gb_sources (root_id, run_id, step, kind, url, requested_url, title, status, bytes, content_type,
			error, cached, body, at)
		SELECT @fork, m.new, s.step, s.kind, s.url, s.requested_url, s.title, s.status, s.bytes, s.content_type,
			s.error, s.cached, s.body, s.at
		FROM gb_sources s JOIN m ON s.run_id = m.old
		WHERE m.old <> @orig OR s.step <= @step),
	events AS (
		INSERT INTO gb_agent_research_events (root_id, run_id, parent_id, kind, data)
		SELECT @fork, m.new, m.parent, e.kind, e.data || '{"replayed": true}'
		FROM gb_agent_research_events e JOIN m ON e.run_id = m.old
		WHERE e.root_id = @orig AND (m.old <> @orig OR (e.kind = '` + EventStep + `' AND (e.data->>'step')::int <= @step))
		ORDER BY e.seq),
	docs AS (
		SELECT nextval(pg_get_serial_sequence('gb_kb_documents', 'id')) AS id, d.id AS old_id, m.new AS run_id,
			d.source, d.title, d.body, d.content_hash, d.root, d.file_hash, d.created_at
		FROM gb_kb_documents d JOIN m ON d.run_id = m.old
		WHERE d.tree_id = @orig AND d.created_at <= @cut),
	copied_docs AS (
		INSERT INTO gb_kb_documents (id, source, title, body, run_id, content_hash, root, tree_id, file_hash, created_at)
		SELECT id, source, title, body, run_id, content_hash, root, @fork, file_hash, created_at FROM docs)
	INSERT INTO gb_kb_passages (document_id, ord, start_char, char_len, heading, symbols, first, tsv)
	SELECT docs.id, p.ord, p.start_char, p.char_len, p.heading, p.symbols, p.first, p.tsv
	FROM gb_kb_passages p JOIN docs ON p.document_id = docs.old_id`

// copyRecord runs copyRecordSQL for the copied runs.
func copyRecord(ctx context.Context, tx pgx.Tx, orig, fork *Run, step int, plan *forkPlan, copied *forkMap) error {
	if _, err := tx.Exec(ctx, copyRecordSQL, pgx.NamedArgs{"old": copied.old, "new": copied.new, "parent": copied.parent,
		"orig": orig.ID, "fork": fork.ID, "step": step, "cut": plan.cut}); err != nil {
		return fmt.Errorf("error copying the record of research %d into its fork: %w", orig.ID, err)
	}
	return nil
}
