package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// meteredModel answers with a function of the request and reports a fixed
// usage per call; it estimates each call's prompt short by promptError
// tokens, so that the bound a tree keeps includes an estimation error.
type meteredModel struct {
	fn          func(ctx context.Context, req llm.Request) (llm.Message, error)
	prompt      int
	completion  int
	promptError int
}

func (m *meteredModel) Name() string { return "metered" }

func (m *meteredModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	msg, err := m.fn(ctx, req)
	if err != nil {
		return llm.Response{}, err
	}
	msg.Role = llm.RoleAssistant
	for i := range msg.ToolCalls {
		msg.ToolCalls[i].ID = fmt.Sprintf("c%d_%d", len(req.Messages), i)
	}
	return llm.Response{Message: msg, Usage: llm.Usage{PromptTokens: m.prompt,
		CompletionTokens: min(m.completion, req.MaxCompletionTokens)}}, nil
}

func (m *meteredModel) EstimateUsage(req llm.Request) llm.Usage {
	return llm.Usage{PromptTokens: m.prompt - m.promptError, CompletionTokens: req.MaxCompletionTokens}
}

// racingTree is a root that spawns four sub-agents at once and waits for
// them; each sub-agent searches until it may no longer call tools.
func racingTree(_ context.Context, req llm.Request) (llm.Message, error) {
	switch {
	case !req.MayCallTools():
		return llm.Message{Content: "report of " + topic(req)}, nil
	case topic(req) != "root":
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", `{"query":"context"}`)}}, nil
	case turns(req) == 0:
		var calls []llm.ToolCall
		for i := range 4 {
			calls = append(calls, toolCall("spawn_subagent",
				fmt.Sprintf(`{"name":"s%d","reason":"covers part %d","task":"part %d"}`, i, i, i)))
		}
		return llm.Message{ToolCalls: calls}, nil
	default:
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
	}
}

func TestTightBudgetHoldsUnderConcurrentSubagents(t *testing.T) {
	t.Parallel()
	const budget = 150
	model := &meteredModel{prompt: 20, completion: 10, promptError: 2, fn: racingTree}
	b := setup(t, setupOpts{model: model, config: jobs.Config{MaxCompletionTokens: 10}})
	ctx := context.Background()
	for round := range 3 {
		root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root", MaxTokens: budget})
		if err != nil {
			t.Fatal(err)
		}
		done := waitEnded(t, b.pool, root.ID, 30*time.Second)
		tree, err := jobs.Tree(ctx, b.pool, root.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range tree {
			if !r.Ended() {
				t.Errorf("round %d: run %d left %s", round, r.ID, r.Status)
			}
			t.Logf("round %d: run %d %s %s steps %d tokens %d %s", round, r.ID, r.Name, r.Status, r.Steps, r.Tokens, r.Error)
		}
		if len(tree) != 5 || done.Report == "" {
			t.Fatalf("round %d: root %s %q with %d runs", round, done.Status, done.Error, len(tree))
		}
		checkBudgetBound(t, b.pool, root.ID, budget)
	}
}

func TestUsageOfAStepThatDidNotCommitIsCountedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	// The first step's transaction fails once, after its model call.
	if _, err := b.pool.Exec(ctx, `
		CREATE SEQUENCE step_inserts;
		CREATE FUNCTION fail_first_step() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF nextval('step_inserts') = 1 THEN RAISE EXCEPTION 'the first commit fails'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER fail_first_step BEFORE INSERT ON gb_agent_research_steps
		FOR EACH ROW EXECUTE FUNCTION fail_first_step()`); err != nil {
		t.Fatal(err)
	}
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, b.pool, &scriptModel{fn: func(context.Context, llm.Request) (llm.Message, error) {
		return llm.Message{Content: "report"}, nil
	}}, jobs.Config{}, nil)
	done := waitEnded(t, b.pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Steps != 1 {
		t.Fatalf("%s steps %d %q", done.Status, done.Steps, done.Error)
	}
	// Two paid calls (scriptModel: 100 + 10 tokens each), one recorded step.
	var calls, committed int
	if err := b.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE committed) FROM gb_model_calls
		WHERE run_id = $1 AND status = 'settled'`, run.ID).Scan(&calls, &committed); err != nil {
		t.Fatal(err)
	}
	if calls != 2 || committed != 1 || done.Tokens != 220 {
		t.Fatalf("calls %d (committed %d), run tokens %d; want 2 calls, 1 committed, 220 tokens", calls, committed, done.Tokens)
	}
}

func TestBudgetWaitOnTheLastAttemptSpendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "q", MaxTokens: 2400})
	if err != nil {
		t.Fatal(err)
	}
	// The job is on its last attempt, and a call of the tree in flight
	// (a running job's reservation) holds the whole budget for 1 s.
	if _, err := b.pool.Exec(ctx, `UPDATE river_job SET attempt = max_attempts - 1
		WHERE args @> jsonb_build_object('run_id', $1::bigint)`, run.ID); err != nil {
		t.Fatal(err)
	}
	var holder int64
	if err := b.pool.QueryRow(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state, attempt, attempted_at)
		VALUES ('{}', 'other', 1, 'elsewhere', 'running', 1, now()) RETURNING id`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `INSERT INTO gb_model_calls (job_id, attempt, run_id, root_id, status, reserved_tokens,
		job_attempted_at) SELECT $1, 1, $2, $2, 'reserved', 2400, attempted_at FROM river_job WHERE id = $1`, holder, run.ID); err != nil {
		t.Fatal(err)
	}
	model := &meteredModel{prompt: 20, completion: 10, fn: func(context.Context, llm.Request) (llm.Message, error) {
		return llm.Message{Content: "report"}, nil
	}}
	startWorker(t, b.pool, model, jobs.Config{MaxCompletionTokens: 10}, nil)
	time.Sleep(time.Second)
	if r, _ := jobs.GetRun(ctx, b.pool, run.ID); r.Ended() {
		t.Fatalf("a wait for the budget on the last attempt ended the run: %s %q", r.Status, r.Error)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE gb_model_calls SET status = 'released' WHERE job_id = $1`, holder); err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, run.ID, 20*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
}

// Sub-agents whose real usage is far above their estimate overspend the
// tree's budget, but never the share kept for the root's report: the root
// still writes it (the squeeze of a closing call needing 1,412 of a
// 1,632-token quarter).
func TestSubagentOvershootLeavesTheReportsShare(t *testing.T) {
	t.Parallel()
	const budget = 6528 // a quarter of 1,632 tokens
	model := &meteredModel{prompt: 1156, completion: 256, promptError: 600, fn: racingTree}
	b := setup(t, setupOpts{model: model, config: jobs.Config{MaxCompletionTokens: 256}})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "root", MaxTokens: budget})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, root.ID, 30*time.Second)
	tree, err := jobs.Tree(ctx, b.pool, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	var spent int64
	for _, r := range tree {
		spent += r.Tokens
		t.Logf("run %d %s %s steps %d tokens %d %s", r.ID, r.Name, r.Status, r.Steps, r.Tokens, r.Error)
	}
	if done.Status != jobs.StatusSucceeded || !strings.HasPrefix(done.Report, "report of") {
		t.Fatalf("root %s %q, report %q: want its own report", done.Status, done.Error, done.Report)
	}
	if spent <= budget*3/4 {
		t.Fatalf("the sub-agents spent %d of %d: the test needs them to overspend their side", spent, budget)
	}
}
