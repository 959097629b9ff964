package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/jackc/pgx/v5"
)

// What the chaos test checks in SQL once every tree has ended.

// checkInvariants checks in SQL, over every run of every tree, that
// nothing is stuck or lost.
func (c *chaos) checkInvariants() {
	t, ctx, pool := c.t, c.ctx, c.pool
	ids := c.rootIDs()
	if len(ids) < 10 {
		t.Errorf("only %d trees were started, want at least 10", len(ids))
	}
	var runs []*jobs.Run
	for _, id := range ids {
		tree, err := jobs.Tree(ctx, pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(tree) < 4 {
			t.Errorf("tree %d has %d runs, want a root and its three sub-agents", id, len(tree))
		}
		runs = append(runs, tree...)
	}

	// Trees whose budget bit: a run ran out, or the root stopped early.
	bit := map[int64]bool{}
	rows, err := pool.Query(ctx, `SELECT DISTINCT root_id FROM gb_agent_research_events
		WHERE root_id = ANY($1) AND kind = 'budget_exhausted'
		UNION SELECT root_id FROM gb_agent_research_runs WHERE root_id = ANY($1) AND error LIKE 'budget exhausted%'`, ids)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		bit[id] = true
	}
	rows.Close()

	// Every run ended, and says why.
	statuses := map[string]int{}
	errs := map[string]int{}
	var otherFailures []string
	for _, r := range runs {
		who := "sub-agent"
		if r.IsRoot() {
			who = "root"
		}
		statuses[who+" "+r.Status]++
		switch {
		case r.Status == jobs.StatusSucceeded && r.Report == "":
			t.Errorf("run %d (%s) succeeded with no report", r.ID, r.Name)
		case r.Status == jobs.StatusFailed && r.Error == "":
			t.Errorf("run %d (%s) failed with no error", r.ID, r.Name)
		case !r.Ended():
			t.Errorf("run %d (%s) did not end: %s/%s", r.ID, r.Name, r.Status, r.State)
		}
		if r.Status != jobs.StatusFailed {
			continue
		}
		class := errorClass(r.Error)
		if class == "cancelled by parent" && bit[r.RootID] {
			class += " (budget)" // its root ran out and wrote its report early
		}
		errs[class]++
		if !strings.HasPrefix(class, "budget exhausted") && class != "cancelled by parent (budget)" {
			otherFailures = append(otherFailures, fmt.Sprintf("run %d (%s, tree %d): %s", r.ID, r.Name, r.RootID, r.Error))
		}
	}
	t.Logf("%d runs in %d trees: %s; errors: %s", len(runs), len(ids), formatCounts(statuses), formatCounts(errs))
	for _, f := range otherFailures {
		t.Logf("failed for another reason than its budget: %s", f)
	}
	// A kill costs a run its job only when all jobs.StepMaxAttempts
	// attempts of one step were killed: it should be rare.
	if len(otherFailures) > len(runs)/20 {
		t.Errorf("%d of %d runs failed for another reason than their budget", len(otherFailures), len(runs))
	}

	// No user ever had more than jobs.MaxWorkingPerUser trees working. A
	// start counts the user's working roots under the user's row lock,
	// then inserts its root and its 'queued' event: the roots of the user
	// with a smaller id had committed before that count, and one whose end
	// was stamped after the event was still working at the count.
	rows, err = pool.Query(ctx, `SELECT a.user_id, a.id, count(*) FROM gb_agent_research_runs a
		JOIN gb_agent_research_events q ON q.run_id = a.id AND q.kind = 'queued'
		JOIN gb_agent_research_runs b ON b.user_id = a.user_id AND b.parent_id IS NULL AND b.id <= a.id
		 AND (b.id = a.id OR coalesce(b.ended_at, 'infinity') > q.at)
		WHERE a.parent_id IS NULL AND a.id = ANY($1) GROUP BY 1, 2 HAVING count(*) > $2`, ids, jobs.MaxWorkingPerUser)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var user, id int64
		var n int
		_ = rows.Scan(&user, &id, &n)
		t.Errorf("user %d had %d trees working when tree %d started", user, n, id)
	}
	rows.Close()

	// Steps recorded exactly once: steps = conversation rows = last step.
	rows, err = pool.Query(ctx, `SELECT r.id, r.steps, count(s.step), coalesce(max(s.step), 0)
		FROM gb_agent_research_runs r LEFT JOIN gb_agent_research_steps s ON s.run_id = r.id
		WHERE r.root_id = ANY($1) GROUP BY r.id HAVING r.steps <> count(s.step) OR r.steps <> coalesce(max(s.step), 0)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var steps, n, last int
		_ = rows.Scan(&id, &steps, &n, &last)
		t.Errorf("run %d: steps %d, conversation rows %d, last step %d", id, steps, n, last)
	}
	rows.Close()

	// Each parent resumed exactly once per wait (a parent whose sub-agents
	// had all ended when it called wait_subagents does not park).
	rows, err = pool.Query(ctx, `SELECT r.id, r.parent_id IS NULL,
			(SELECT count(*) FROM gb_agent_research_events e WHERE e.run_id = r.id AND e.kind = 'waiting'),
			(SELECT count(*) FROM gb_agent_research_events e WHERE e.run_id = r.id AND e.kind = 'resumed')
		FROM gb_agent_research_runs r WHERE r.root_id = ANY($1) ORDER BY r.id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var root bool
		var waits, resumed int
		_ = rows.Scan(&id, &root, &waits, &resumed)
		if waits != resumed {
			t.Errorf("run %d parked %d times but resumed %d times", id, waits, resumed)
		}
		if root && resumed > 1 {
			t.Errorf("root %d resumed %d times, want at most 1; its events: %s", id, resumed, c.events(id))
		}
	}
	rows.Close()

	// No job left behind.
	rows, err = pool.Query(ctx, `SELECT j.id, j.state::text, (j.args->>'run_id')::bigint, r.status
		FROM river_job j LEFT JOIN gb_agent_research_runs r ON r.id = (j.args->>'run_id')::bigint
		WHERE j.finalized_at IS NULL ORDER BY j.id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, run int64
		var state string
		var status *string
		_ = rows.Scan(&id, &state, &run, &status)
		t.Errorf("job %d of run %d (%v) left %s", id, run, deref(status), state)
	}
	rows.Close()

	c.checkMessages(ids)
	c.checkBudgets(ids)
}

// events lists a run's events and the tools of its steps, to tell what
// happened to it.
func (c *chaos) events(id int64) string {
	var out string
	_ = c.pool.QueryRow(c.ctx, `SELECT coalesce(string_agg(format('%s %s', kind, data::text), '; ' ORDER BY seq), '')
		FROM gb_agent_research_events WHERE run_id = $1`, id).Scan(&out)
	return out
}

// checkMessages checks that every send_message that succeeded stored one
// message and every stored message came from one (the sender's events and
// tool results agree with gb_messages), and that every message read was
// read once: it is in exactly one read_messages result of its receiver
// when read_at is set, and in none when not.
func (c *chaos) checkMessages(ids []int64) {
	t, ctx, pool := c.t, c.ctx, c.pool
	var stored, events, sentResults int
	if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM gb_messages m JOIN gb_agent_research_runs r ON r.id = m.from_id WHERE r.root_id = ANY($1)),
			(SELECT count(*) FROM gb_agent_research_events WHERE root_id = ANY($1) AND kind = 'message'),
			(SELECT count(*) FROM gb_agent_research_steps s JOIN gb_agent_research_runs r ON r.id = s.run_id,
			     jsonb_array_elements(s.messages) e
			 WHERE r.root_id = ANY($1) AND e->>'role' = 'tool' AND e->>'name' = 'send_message'
			   AND e->>'content' LIKE 'sent to %')`, ids).Scan(&stored, &events, &sentResults); err != nil {
		t.Fatal(err)
	}
	// Per sender and receiver, so that a loss and a duplicate elsewhere do
	// not cancel out.
	rows, err := pool.Query(ctx, `WITH sent AS (
			SELECT e.run_id AS from_id, (e.data->>'to_run')::bigint AS to_id, count(*) AS n
			FROM gb_agent_research_events e WHERE e.root_id = ANY($1) AND e.kind = 'message' GROUP BY 1, 2),
		stored AS (
			SELECT m.from_id, m.to_id, count(*) AS n FROM gb_messages m
			JOIN gb_agent_research_runs r ON r.id = m.from_id WHERE r.root_id = ANY($1) GROUP BY 1, 2)
		SELECT coalesce(s.from_id, m.from_id), coalesce(s.to_id, m.to_id), coalesce(s.n, 0), coalesce(m.n, 0)
		FROM sent s FULL JOIN stored m ON m.from_id = s.from_id AND m.to_id = s.to_id
		WHERE coalesce(s.n, 0) <> coalesce(m.n, 0)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var from, to, sent, kept int64
		_ = rows.Scan(&from, &to, &sent, &kept)
		t.Errorf("run %d sent %d messages to run %d (events), but %d are stored", from, sent, to, kept)
	}
	rows.Close()
	if stored != events || stored != sentResults {
		t.Errorf("messages: %d stored, %d 'message' events, %d send_message results", stored, events, sentResults)
	}

	type msg struct {
		id, from, to int64
		name, text   string
		read         bool
	}
	rows, err = pool.Query(ctx, `SELECT m.id, m.from_id, m.to_id, m.from_name, m.text, m.read_at IS NOT NULL
		FROM gb_messages m JOIN gb_agent_research_runs r ON r.id = m.to_id WHERE r.root_id = ANY($1) ORDER BY m.id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (msg, error) {
		var m msg
		err := r.Scan(&m.id, &m.from, &m.to, &m.name, &m.text, &m.read)
		return m, err
	})
	if err != nil {
		t.Fatal(err)
	}
	// What each receiver read, from its conversation.
	rows, err = pool.Query(ctx, `SELECT s.run_id, e->>'content' FROM gb_agent_research_steps s
		JOIN gb_agent_research_runs r ON r.id = s.run_id, jsonb_array_elements(s.messages) e
		WHERE r.root_id = ANY($1) AND e->>'role' = 'tool' AND e->>'name' = 'read_messages'`, ids)
	if err != nil {
		t.Fatal(err)
	}
	read := map[int64][]string{}
	var reads int
	for rows.Next() {
		var run int64
		var content string
		_ = rows.Scan(&run, &content)
		read[run] = append(read[run], content)
		reads++
	}
	rows.Close()
	type key struct {
		from, to int64
		text     string
	}
	want, got := map[key]int{}, map[key]int{}
	var unread int
	for _, m := range msgs {
		k := key{m.from, m.to, m.text}
		if m.read {
			want[k]++
		} else {
			unread++
		}
		if _, ok := got[k]; ok {
			continue
		}
		for _, r := range read[m.to] {
			got[k] += countMessage(r, m.name, m.from, m.text)
		}
	}
	for k, n := range got {
		if n != want[k] {
			t.Errorf("message from run %d to run %d (%.60q): read %d times in its receiver's conversation, read_at set on %d",
				k.from, k.to, k.text, n, want[k])
		}
	}
	t.Logf("messages: %d sent and stored, %d read (by %d read_messages results), %d never read (their receiver had read or ended)",
		stored, len(msgs)-unread, reads, unread)
	if stored == 0 {
		t.Error("no sub-agent messaged a sibling")
	}
}

// checkBudgets checks that no tree with a budget spent past it: what its
// runs count is at most its max_tokens plus what settled calls used beyond
// their reservation (a reservation bounds a call only by the model's
// estimate). It also checks that each paid call is counted once: the runs'
// tokens are the sum of the tree's settled calls.
func (c *chaos) checkBudgets(ids []int64) {
	t, ctx, pool := c.t, c.ctx, c.pool
	rows, err := pool.Query(ctx, `SELECT r.id, r.max_tokens, r.status,
			(SELECT sum(tokens) FROM gb_agent_research_runs x WHERE x.root_id = r.id)::bigint,
			(SELECT coalesce(sum(greatest(0, prompt_tokens + completion_tokens - reserved_tokens)), 0)
			 FROM gb_model_calls WHERE root_id = r.id AND status = 'settled')::bigint,
			(SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM gb_model_calls
			 WHERE root_id = r.id AND status = 'settled')::bigint,
			(SELECT count(*) FROM gb_agent_research_events e WHERE e.root_id = r.id AND e.kind = 'budget_exhausted')
		FROM gb_agent_research_runs r WHERE r.id = ANY($1) ORDER BY r.id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	type spend struct {
		trees, bitten, stopped, outOfBudget, rootsFailed int
		min, max, minBudget, maxBudget                   int64
	}
	kinds := map[int64]int{}
	c.mu.Lock()
	for _, r := range c.roots {
		kinds[r.id] = r.kind
	}
	c.mu.Unlock()
	by := map[int]*spend{} // by kind of budget, -1 for none
	for rows.Next() {
		var id, spent, over, ledger int64
		var maxTokens *int64
		var status string
		var exhausted int
		if err := rows.Scan(&id, &maxTokens, &status, &spent, &over, &ledger, &exhausted); err != nil {
			t.Fatal(err)
		}
		if spent != ledger {
			t.Errorf("tree %d: its runs count %d tokens, its settled model calls %d", id, spent, ledger)
		}
		var budget int64
		if maxTokens != nil {
			budget = *maxTokens
			if spent > budget+over {
				t.Errorf("tree %d spent %d tokens, past its budget of %d (+%d used beyond reservations)", id, spent, budget, over)
			}
		}
		var outOfBudget int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_runs WHERE root_id = $1 AND error LIKE 'budget exhausted%'`,
			id).Scan(&outOfBudget); err != nil {
			t.Fatal(err)
		}
		b := by[kinds[id]]
		if b == nil {
			b = &spend{min: spent, max: spent, minBudget: budget, maxBudget: budget}
			by[kinds[id]] = b
		}
		b.trees++
		b.min, b.max = min(b.min, spent), max(b.max, spent)
		b.minBudget, b.maxBudget = min(b.minBudget, budget), max(b.maxBudget, budget)
		b.outOfBudget += outOfBudget
		if exhausted > 0 {
			b.stopped++
		}
		if exhausted+outOfBudget > 0 {
			b.bitten++
		}
		if status == jobs.StatusFailed {
			b.rootsFailed++
		}
	}
	rows.Close()
	var twice, reserved int
	if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM (SELECT run_id FROM gb_agent_research_events WHERE root_id = ANY($1) AND kind = 'budget_exhausted'
			                       GROUP BY run_id HAVING count(*) > 1) x),
			(SELECT count(*) FROM gb_model_calls WHERE root_id = ANY($1) AND status = 'reserved')`, ids).Scan(&twice, &reserved); err != nil {
		t.Fatal(err)
	}
	t.Logf("roots with more than one budget_exhausted event: %d; model calls left 'reserved' by killed attempts: %d "+
		"(the maintenance pass settles those of dead workers at their estimates)", twice, reserved)
	if twice > 0 {
		// What recorded the stop twice: the events, and the attempts of
		// the root's step jobs then.
		rows, err := pool.Query(ctx, `SELECT e.run_id, string_agg(format('seq %s at %s', e.seq, to_char(e.at, 'HH24:MI:SS.MS')), ', ' ORDER BY e.seq),
				(SELECT string_agg(format('job %s step %s %s attempt %s errors %s', j.id, j.args->>'step', j.state, j.attempt,
				        coalesce((SELECT string_agg(format('%s@%s %s', x->>'attempt', to_char((x->>'at')::timestamptz, 'HH24:MI:SS.MS'),
				                 left(x->>'error', 50)), '; ') FROM unnest(j.errors) x), '-')), ' | ' ORDER BY j.id)
				 FROM river_job j WHERE j.args @> jsonb_build_object('run_id', e.run_id)
				   AND (j.args->>'step')::int >= (SELECT steps FROM gb_agent_research_runs WHERE id = e.run_id))
			FROM gb_agent_research_events e WHERE e.root_id = ANY($1) AND e.kind = 'budget_exhausted'
			GROUP BY e.run_id HAVING count(*) > 1 ORDER BY e.run_id LIMIT 3`, ids)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var run int64
			var evs string
			var js *string
			_ = rows.Scan(&run, &evs, &js)
			t.Logf("  root %d: budget_exhausted %s; its last step's jobs: %s", run, evs, deref(js))
		}
		rows.Close()
	}
	for _, kind := range slices.Sorted(maps.Keys(by)) {
		b := by[kind]
		what := "no budget"
		if kind >= 0 {
			what = fmt.Sprintf("a budget of %d to %d tokens (%d, then %.2f of the most a tree with none spent)",
				b.minBudget, b.maxBudget, chaosBudgets[kind], chaosBudgetShares[kind])
		}
		t.Logf("trees with %s: %d, spent %d to %d tokens; the budget bit in %d (the root wrote its report from the share kept for it in %d; %d runs ended out of budget); %d roots failed",
			what, b.trees, b.min, b.max, b.bitten, b.stopped, b.outOfBudget, b.rootsFailed)
	}
}

// dump logs, on failure, the runs of every tree, then dumpTree of the
// first tree with a run that did not succeed (which also logs every job),
// and the last lines of the last worker processes.
func (c *chaos) dump() {
	t, ctx := c.t, c.ctx
	first := int64(0)
	for _, id := range c.rootIDs() {
		tree, _ := jobs.Tree(ctx, c.pool, id)
		for _, r := range tree {
			if r.Status != jobs.StatusSucceeded && first == 0 {
				first = id
			}
			if id != first {
				t.Logf("run %d %s (tree %d): %s/%s steps %d tokens %d error %q", r.ID, r.Name, id, r.Status, r.State, r.Steps, r.Tokens, r.Error)
			}
		}
	}
	if first == 0 && len(c.rootIDs()) > 0 {
		first = c.rootIDs()[0]
	}
	if first != 0 {
		dumpTree(t, c.pool, first)
	}
	procs := c.procsSnapshot()
	for _, p := range procs[max(0, len(procs)-4):] {
		t.Logf("worker %d started at %s (GB_FAULT_KILL=%q), last lines:\n%s", p.slot,
			p.started.Sub(c.begin).Round(time.Millisecond), p.fault, p.log.tail(15))
	}
}

// errorClass groups the errors of failed runs.
func errorClass(e string) string {
	switch {
	case strings.HasPrefix(e, "budget exhausted"):
		return "budget exhausted"
	case strings.HasPrefix(e, jobs.CancelledByParent):
		return "cancelled by parent"
	case strings.Contains(e, "job was lost"):
		return "job lost"
	case strings.HasPrefix(e, "model error"):
		return "model error"
	}
	if len(e) > 40 {
		e = e[:40]
	}
	return e
}

func deref(s *string) string {
	if s == nil {
		return "deleted"
	}
	return *s
}

// countMessage counts the times a read_messages result holds the message
// text from name (run from): its header line, then the text alone inside
// its labelled untrusted block.
func countMessage(result, name string, from int64, text string) int {
	head := fmt.Sprintf("From %s (run %d):\n<<<UNTRUSTED WEB CONTENT: message from %s (run %d)", name, from, name, from)
	n := 0
	for rest := result; ; {
		i := strings.Index(rest, head)
		if i < 0 {
			return n
		}
		rest = rest[i+len(head):]
		_, body, ok := strings.Cut(rest, ">>>\n")
		if !ok {
			return n
		}
		body, _, ok = strings.Cut(body, "\n<<<END UNTRUSTED WEB CONTENT>>>")
		if ok && body == strings.TrimSpace(text) {
			n++
		}
	}
}
