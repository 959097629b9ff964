package jobs

import (
	"context"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// The statements of a step, in the order a step sends them. A step job
// loads its run in one round trip of reads (the run, its tree's budget,
// its conversation and its parent's unread inputs, sent as one batch); its
// first admission marks the run thinking (admitFirstSQL). A step whose
// tools are all read-only and after which the same job goes on commits in
// one round trip: lockRootSQL (a sub-agent's), recordStepSQL, the parent's
// inputs for the next step and the next call's admission, as one batch in
// one implicit transaction. Any other step opens a transaction: lockTreeSQL, the
// tools that run in it, recordStepSQL, then what comes next (an end, a
// park, or the next step job).

// rootLimitsSQL reads the budget of a run's tree from its root.
const rootLimitsSQL = `SELECT t.max_tokens, t.max_cost_usd::float8 FROM gb_agent_research_runs r
	JOIN gb_agent_research_runs t ON t.id = r.root_id WHERE r.id = $1`

// conversationSQL loads the messages of every committed step of a run,
// a row per step, in order.
const conversationSQL = `SELECT messages FROM gb_agent_research_steps WHERE run_id = $1 ORDER BY step`

// refusalsSQL counts, by step, the calls of a run that the provider
// refused for their size ($2, $3: the outcomes that say so).
const refusalsSQL = `SELECT step, count(*)::int FROM gb_model_calls
	WHERE run_id = $1 AND status = 'released' AND outcome IN ($2, $3) GROUP BY step`

// tokenRatioSQL is how many prompt tokens the provider counted for each of
// gb's own in the run's latest answered call (none: no such call).
const tokenRatioSQL = `SELECT prompt_tokens::float8 / est_prompt_tokens FROM gb_model_calls
	WHERE run_id = $1 AND status = 'settled' AND NOT estimated AND est_prompt_tokens > 0 AND prompt_tokens > 0
	ORDER BY id DESC LIMIT 1`

// parentInputsSQL lists the unread messages a sub-agent's parent sent it.
const parentInputsSQL = `SELECT m.id, m.text FROM gb_messages m JOIN gb_agent_research_runs r ON r.id = m.to_id
	WHERE m.to_id = $1 AND m.from_id = r.parent_id AND m.read_at IS NULL ORDER BY m.id`

// lockTreeSQL locks the root of a run's tree, then the run itself, so that
// every writer of a tree takes its locks in the same order (a root's id is
// the smallest of its tree).
const lockTreeSQL = "SELECT " + runColumns + ` FROM gb_agent_research_runs
	WHERE id = ANY($1) ORDER BY id FOR UPDATE`

// lockRootSQL locks the root of a tree, which every writer of the tree
// locks first.
const lockRootSQL = `SELECT id FROM gb_agent_research_runs WHERE id = $1 FOR UPDATE`

// recordStepSQL records a step in one statement, if the run is still at
// the step before it and still going (not ended, not parked, not deleted):
// it marks the run at that step, in the state it is left in (@state), with
// the step's usage added (@prompt_tokens, @cached_tokens of them,
// @completion_tokens, @reasoning_tokens of them, @cost_usd: the model
// call's and its tools'); it inserts the step's messages (@messages) and
// the states it went through (@states, in order, each at the step of
// @state_steps: kept on the step's row, see statesSQL), its events (@event_kinds and @event_data, in order), the
// sources its tools read (@sources, a JSON array), marks the messages it
// delivered (@inputs) read, and settles the model call's ledger row
// (@call) with the call's own usage (@call_prompt_tokens,
// @call_completion_tokens, @call_cost_usd), keeping with the step its
// details (@details, stepDetails.encode) and its retries (stepRetriesSQL).
// It returns whether it recorded the step, and queues a NOTIFY on
// @channel for the tree when a reader holds a live lease on its events
// (see addEventSQL). The caller holds the tree's root lock. Its arguments
// are record.args.
const recordStepSQL = `WITH run AS (
		UPDATE gb_agent_research_runs SET steps = @step, state = @state, status = 'working',
			started_at = coalesce(started_at, now()), updated_at = now(), wait_names = '{}', wait_call_id = '',
			prompt_tokens = prompt_tokens + @prompt_tokens, completion_tokens = completion_tokens + @completion_tokens,
			cached_tokens = cached_tokens + @cached_tokens, reasoning_tokens = reasoning_tokens + @reasoning_tokens,
			tokens = tokens + @prompt_tokens + @completion_tokens, cost_usd = cost_usd + @cost_usd,
			pinned = @pinned
		WHERE id = @run AND steps = @step - 1 AND status IN ('queued', 'working')
		RETURNING id, root_id, parent_id),
	step AS (
		INSERT INTO gb_agent_research_steps (run_id, step, messages, prompt_tokens, completion_tokens, cost_usd,
			cached_tokens, reasoning_tokens, model, started_at, model_ms, tool_ms, compaction, retries, retry_outcomes,
			states, state_steps, version, behaviour, created_at)
		SELECT id, @step, @messages, @prompt_tokens, @completion_tokens, @cost_usd, @cached_tokens, @reasoning_tokens, d.model, d.started_at, d.model_ms, d.tool_ms, d.compaction,
			r.n, r.outcomes, @states::text[], @state_steps::int[], d.version, @pinned, clock_timestamp()
		FROM run, jsonb_to_record(@details::jsonb) AS d(model text, started_at timestamptz, model_ms int, tool_ms int,
			compaction jsonb, version text), (` + stepRetriesSQL + `) AS r),
	call AS (
		UPDATE gb_model_calls SET status = 'settled', prompt_tokens = @call_prompt_tokens, cached_tokens = @cached_tokens,
			completion_tokens = @call_completion_tokens, reasoning_tokens = @reasoning_tokens, cost_usd = @call_cost_usd, committed = true,
			outcome = '` + outcomeAnswered + `', settled_at = now()
		WHERE id = @call AND status IN ('queued', 'reserved') AND EXISTS (SELECT 1 FROM run)),
	events AS (
		INSERT INTO gb_agent_research_events (root_id, run_id, parent_id, kind, data)
		SELECT run.root_id, run.id, run.parent_id, u.k, u.d
		FROM run, unnest(@event_kinds::text[], @event_data::jsonb[]) WITH ORDINALITY AS u(k, d, o) ORDER BY u.o),
	sources AS (
		INSERT INTO gb_sources (root_id, run_id, step, kind, url, requested_url, title, status, bytes, content_type,
			error, cached, body)
		SELECT run.root_id, run.id, @step, x.kind, x.url, x.requested_url, x.title, x.status, x.bytes, x.content_type,
			x.error, x.cached, x.body
		FROM run, jsonb_to_recordset(@sources::jsonb) AS x(kind text, url text, requested_url text, title text, status int,
			bytes bigint, content_type text, error text, cached boolean, body text)),
	inputs AS (
		UPDATE gb_messages SET read_at = now()
		WHERE id = ANY(@inputs::bigint[]) AND read_at IS NULL AND EXISTS (SELECT 1 FROM run))
	SELECT EXISTS (SELECT 1 FROM run),
		(SELECT count(pg_notify(@channel, w.root_id::text)) FROM gb_event_waiters w
		 WHERE w.root_id = (SELECT root_id FROM run) AND w.waiting_until > now())`

// runJobSQL is the condition that the River job j (a table alias) is one
// of the run whose id is the SQL expression id: its step, timeout and
// wake jobs. It spells out the kinds so that the partial index
// gb_river_job_run_idx (migration 012) serves it; River's GIN index on
// args would read every job's entry for the key run_id.
func runJobSQL(j, id string) string {
	return "(" + j + ".args->>'run_id')::bigint = " + id + " AND " + j + ".kind IN ('" +
		StepKind + "', '" + TimeoutKind + "', '" + MessageWakeKind + "')"
}

// The statements that insert a run return the new run's runColumns.

// runByScheduleKeySQL reads the research a schedule key already started.
const runByScheduleKeySQL = "SELECT " + runColumns + " FROM gb_agent_research_runs WHERE schedule_key = $1"

// insertSubagentSQL inserts a sub-agent of @parent, in @parent's tree
// (@root), queued, with the tree's sub-agent bound and start time, pinned
// to the bundle of its parent's step (@pinned, behaviour.go).
const insertSubagentSQL = `INSERT INTO gb_agent_research_runs
		(user_id, parent_id, root_id, depth, name, reason, topic, model, dataset, max_steps, agent_type, deadline,
		 max_subagents, tree_started_at, pinned)
	VALUES (@user, @parent, @root, @depth, @name, @reason, @topic, @model, @dataset, @max_steps, @agent_type,
		@deadline, @max_subagents, @tree_started_at, @pinned)
	RETURNING ` + runColumns

// namedSQL is a statement written with named arguments (@name), rewritten
// to positional ones ($n) once: pgx's NamedArgs rewrites the statement's
// text on every call, which for recordStepSQL was a tenth of a step's CPU.
type namedSQL struct {
	sql   string
	names []string // the argument of each position, from $1
}

// namedArgRE finds what may be a named argument; pgx's rewrite tells
// which ones are (not in a string, a comment or a quoted name).
var namedArgRE = regexp.MustCompile(`@([A-Za-z_][A-Za-z0-9_]*)`)

// rewriteNamed rewrites sql with pgx's own rewrite of named arguments,
// each name given as its own value so that the order of the arguments
// names them.
func rewriteNamed(sql string) *namedSQL {
	na := pgx.NamedArgs{}
	for _, m := range namedArgRE.FindAllStringSubmatch(sql, -1) {
		na[m[1]] = m[1]
	}
	out, args, err := na.RewriteQuery(context.Background(), nil, sql, nil)
	if err != nil {
		panic("jobs: cannot rewrite a statement's named arguments: " + err.Error())
	}
	n := &namedSQL{sql: out, names: make([]string, len(args))}
	for i, a := range args {
		n.names[i] = a.(string)
	}
	return n
}

// args are the values of na in the order of the statement's positions,
// NULL for a name na lacks (as pgx sends it).
func (n *namedSQL) args(na pgx.NamedArgs) []any {
	out := make([]any, len(n.names))
	for i, name := range n.names {
		out[i] = na[name]
	}
	return out
}

// recordStep is recordStepSQL with positional arguments.
var recordStep = rewriteNamed(recordStepSQL)
