package jobs

// The statements of a step, in the order a step sends them. A step job
// loads its run in one round trip (markThinkingSQL, then the run, its
// tree's budget, its conversation and its parent's unread inputs, sent as
// one batch); each step then commits in one transaction: lockTreeSQL,
// the step's tools, and one batch that records it (insertStepSQL,
// updateRunStepSQL, insertStatesSQL, settleSQL, insertEventsSQL and
// markInputsReadSQL).

// markThinkingSQL marks a run thinking, with a row of its state history,
// when the job ($2 is the step it was made for) will make a step of it; a
// run already thinking (the job's previous step said so) is left alone.
const markThinkingSQL = `WITH u AS (
		UPDATE gb_agent_research_runs SET state = 'thinking', updated_at = now()
		WHERE id = $1 AND status IN ('queued', 'working') AND steps + 1 >= $2 AND state <> 'thinking'
		RETURNING id, steps)
	INSERT INTO gb_agent_research_states (run_id, state, step) SELECT id, 'thinking', steps + 1 FROM u`

// rootLimitsSQL reads the budget of a run's tree from its root.
const rootLimitsSQL = `SELECT t.max_tokens, t.max_cost_usd::float8 FROM gb_agent_research_runs r
	JOIN gb_agent_research_runs t ON t.id = r.root_id WHERE r.id = $1`

// conversationSQL loads the messages of every committed step of a run,
// a row per step, in order.
const conversationSQL = `SELECT messages FROM gb_agent_research_steps WHERE run_id = $1 ORDER BY step`

// parentInputsSQL lists the unread messages a sub-agent's parent sent it.
const parentInputsSQL = `SELECT m.id, m.text FROM gb_messages m JOIN gb_agent_research_runs r ON r.id = m.to_id
	WHERE m.to_id = $1 AND m.from_id = r.parent_id AND m.read_at IS NULL ORDER BY m.id`

// lockTreeSQL locks the root of a run's tree, then the run itself, so that
// every writer of a tree takes its locks in the same order (a root's id is
// the smallest of its tree).
const lockTreeSQL = "SELECT " + runColumns + ` FROM gb_agent_research_runs
	WHERE id = ANY($1) ORDER BY id FOR UPDATE`

// insertStepSQL records a step's messages and usage.
const insertStepSQL = `INSERT INTO gb_agent_research_steps
	(run_id, step, messages, prompt_tokens, completion_tokens, cost_usd) VALUES ($1, $2, $3, $4, $5, $6)`

// updateRunStepSQL marks a run working at the step it recorded, in the
// state it is left in; its usage is added by settleSQL.
const updateRunStepSQL = `UPDATE gb_agent_research_runs SET
		steps = $2, state = $3, status = 'working', started_at = coalesce(started_at, now()), updated_at = now(),
		wait_names = '{}', wait_call_id = ''
	WHERE id = $1`

// insertStatesSQL appends the states a step went through to the run's
// state history, in order.
const insertStatesSQL = `INSERT INTO gb_agent_research_states (run_id, state, step)
	SELECT $1, s, $3 FROM unnest($2::text[]) WITH ORDINALITY AS u(s, o) ORDER BY o`

// insertEventsSQL appends events of one run to its tree's timeline, in
// order, and queues one NOTIFY for the tree when a reader holds a live
// lease on it (see addEventSQL).
const insertEventsSQL = `WITH ins AS (
		INSERT INTO gb_agent_research_events (root_id, run_id, parent_id, kind, data)
		SELECT $1, $2, $3, k, d FROM unnest($4::text[], $5::jsonb[]) WITH ORDINALITY AS u(k, d, o) ORDER BY o
		RETURNING root_id)
	SELECT pg_notify($6, $1::text) FROM gb_event_waiters w
	WHERE w.root_id = $1 AND w.waiting_until > now() AND EXISTS (SELECT 1 FROM ins)`

// markInputsReadSQL marks the messages a step delivered as read.
const markInputsReadSQL = `UPDATE gb_messages SET read_at = now() WHERE id = ANY($1) AND read_at IS NULL`

// backdateJobSQL orders a run's new step job by its tree's start: River
// takes available jobs by priority, then scheduled_at, so the steps of a
// tree already under way go ahead of the first steps of newer trees and
// trees finish in the order they began.
const backdateJobSQL = `UPDATE river_job SET scheduled_at = t.created_at
	FROM gb_agent_research_runs r JOIN gb_agent_research_runs t ON t.id = r.root_id
	WHERE river_job.id = $1 AND r.id = $2 AND river_job.state = 'available' AND river_job.scheduled_at > t.created_at`
