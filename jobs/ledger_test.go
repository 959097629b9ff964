package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// ledgerRow is a model call as the ledger records it.
type ledgerRow struct {
	status, outcome     string
	prompt, completion  int
	estimated, commited bool
}

// ledger reads the model calls of a run, oldest first.
func ledger(t *testing.T, pool *pgxpool.Pool, runID int64) []ledgerRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT status, outcome, prompt_tokens, completion_tokens, estimated,
		committed FROM gb_model_calls WHERE run_id = $1 ORDER BY id`, runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []ledgerRow
	for rows.Next() {
		var r ledgerRow
		if err := rows.Scan(&r.status, &r.outcome, &r.prompt, &r.completion, &r.estimated, &r.commited); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// The shared token buckets: a minute's limit at once, then one call per
// refill interval, each told when it may start; a call larger than the
// token limit can never start.
func TestTakeCapacitySpacesCallsAtTheLimit(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO gb_rate_limits (key, rpm, tpm, configured) VALUES ('m', 60, 6000, true)`); err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	for range 8 {
		var at time.Time
		var now time.Time
		if err := pool.QueryRow(ctx, `SELECT gb_take_capacity('m', 1000, true), clock_timestamp()`).Scan(&at, &now); err != nil {
			t.Fatal(err)
		}
		waits = append(waits, at.Sub(now))
	}
	// 6000 tokens a minute, nine tenths of it at once: five calls of 1000
	// at once, the sixth when 600 more have come (6 s), then one every 10 s.
	for i, w := range waits {
		want := time.Duration(i-5)*10*time.Second + 6*time.Second
		if i < 5 {
			want = 0
		}
		if w < want-time.Second || w > want+time.Second {
			t.Errorf("call %d may start in %s, want about %s", i+1, w, want)
		}
	}
	// A queued call that turned out 500 tokens larger is charged them: the
	// next call waits 5 s more than it would have.
	var now time.Time
	if err := pool.QueryRow(ctx, `SELECT gb_take_capacity('m', 500, false), clock_timestamp()`).Scan(&now, &now); err != nil {
		t.Fatal(err)
	}
	var next time.Time
	if err := pool.QueryRow(ctx, `SELECT gb_take_capacity('m', 1000, true), clock_timestamp()`).Scan(&next, &now); err != nil {
		t.Fatal(err)
	}
	if w, want := next.Sub(now), 3*10*time.Second+6*time.Second+5*time.Second; w < want-time.Second || w > want+time.Second {
		t.Errorf("after a charge of 500 tokens, call 9 may start in %s, want about %s", w, want)
	}
	var never bool
	if err := pool.QueryRow(ctx, `SELECT NOT isfinite(gb_take_capacity('m', 7000, true))`).Scan(&never); err != nil {
		t.Fatal(err)
	}
	if !never {
		t.Errorf("a call of 7000 tokens against 6000 a minute may start, want never (infinity)")
	}
	var at time.Time
	if err := pool.QueryRow(ctx, `SELECT gb_take_capacity('unknown', 7000, true)`).Scan(&at); err != nil || time.Since(at) > time.Minute {
		t.Errorf("a key with no limits: %s, %v; want now", at, err)
	}
}

// A call the provider refuses for want of capacity goes back to the queue
// without spending an attempt, however often, and is not billed.
func TestRateLimitedCallsSpendNoAttempt(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	model := &scriptModel{fn: func(context.Context, llm.Request) (llm.Message, error) {
		if calls.Add(1) <= jobs.StepMaxAttempts+2 {
			return llm.Message{}, &llm.CallError{Err: llm.ErrRateLimited, RetryAfter: 20 * time.Millisecond, Sent: true}
		}
		return llm.Message{Content: "report"}, nil
	}}
	b := setup(t, setupOpts{model: model})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q after %d calls", done.Status, done.Error, calls.Load())
	}
	rows := ledger(t, b.pool, run.ID)
	var refused, settled int
	for _, r := range rows {
		switch {
		case r.status == "released" && r.outcome == "rate limited":
			refused++
		case r.status == "settled" && r.commited:
			settled++
		}
	}
	if refused != jobs.StepMaxAttempts+2 || settled != 1 || len(rows) != refused+settled {
		t.Fatalf("ledger %+v: want %d refusals released and 1 settled call", rows, jobs.StepMaxAttempts+2)
	}
}

// An answer the provider billed but that holds nothing (a reasoning model
// that spent its cap thinking) is counted and retried, with a larger cap.
func TestUnusableAnswerIsBilledAndRetriedWithMoreRoom(t *testing.T) {
	t.Parallel()
	var caps []int
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		caps = append(caps, req.MaxCompletionTokens)
		if len(caps) == 1 {
			return llm.Message{}, &llm.CallError{Err: fmt.Errorf("%w: no content and no tool calls", llm.ErrUnusable),
				Usage: llm.Usage{PromptTokens: 300, CompletionTokens: req.MaxCompletionTokens, ReasoningTokens: req.MaxCompletionTokens}, Sent: true}
		}
		return llm.Message{Content: "report"}, nil
	}}
	b := setup(t, setupOpts{model: model})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	if len(caps) != 2 || caps[1] != 2*caps[0] {
		t.Errorf("completion caps %v: want the retry to get twice the room", caps)
	}
	rows := ledger(t, b.pool, run.ID)
	if len(rows) != 2 || rows[0].outcome != "unusable answer" || rows[0].prompt != 300 || rows[1].outcome != "answered" {
		t.Fatalf("ledger %+v", rows)
	}
	if want := int64(300 + caps[0] + 100 + 10); done.Tokens != want || done.ReasoningTokens != int64(caps[0]) {
		t.Fatalf("run tokens %d (reasoning %d), want %d with the unusable answer's", done.Tokens, done.ReasoningTokens, want)
	}
}

// A call cut off after it was sent (its worker stopped) counts at its
// estimate; one whose worker died is settled by the maintenance pass.
func TestCallsCutOffOrLostAreCountedAtTheirEstimate(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	model := &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		if !strings.Contains(topic(req), "hang") {
			return llm.Message{Content: "report"}, nil
		}
		started <- struct{}{}
		<-ctx.Done()
		return llm.Message{}, &llm.CallError{Err: errors.Join(llm.ErrTransient, ctx.Err()), Sent: true}
	}}
	b := setup(t, setupOpts{model: model, noWork: true})
	ctx := context.Background()
	run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "hang"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := jobs.New(jobs.Deps{Pool: b.pool, Model: model, Work: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-started
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_ = w.Stop(sctx) // the step is cut off and goes back to the queue
	rows := ledger(t, b.pool, run.ID)
	if len(rows) != 1 || rows[0].status != "settled" || !rows[0].estimated || rows[0].outcome != "cut off after it was sent" ||
		rows[0].completion == 0 {
		t.Fatalf("ledger %+v: want the cut-off call settled at its estimate", rows)
	}

	// A row left in flight by a worker that died: its job attempt is no
	// longer running.
	if _, err := b.pool.Exec(ctx, `INSERT INTO gb_model_calls (job_id, attempt, step, run_id, root_id, status,
		reserved_tokens, max_completion_tokens, reserved_cost_usd, job_attempted_at, created_at)
		VALUES (0, 1, 1, $1, $1, 'reserved', 1500, 1000, 0.25, now() - interval '1 minute', now() - interval '1 minute')`,
		run.ID); err != nil {
		t.Fatal(err)
	}
	before, err := jobs.GetRun(ctx, b.pool, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.agent.Maintain(ctx, jobs.MaintainParams{})
	if err != nil || res.LostCalls != 1 {
		t.Fatalf("maintain: %+v, %v; want one lost call settled", res, err)
	}
	after, err := jobs.GetRun(ctx, b.pool, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.PromptTokens-before.PromptTokens != 500 || after.CompletionTokens-before.CompletionTokens != 1000 ||
		after.CostUSD-before.CostUSD < 0.2499 {
		t.Fatalf("run usage went from %+v to %+v; want the lost call's estimate added", before, after)
	}
	if res, err := b.agent.Maintain(ctx, jobs.MaintainParams{}); err != nil || res.LostCalls != 0 {
		t.Fatalf("second pass: %+v, %v; want nothing settled twice", res, err)
	}
}

// A budget that could never produce a report is refused with the smallest
// workable figure, and one that rounds to nothing is refused too.
func TestBudgetTooSmallIsRefusedWithTheSmallestFigure(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	_, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "q", MaxTokens: 10})
	var fe *jobs.FieldError
	if !errors.As(err, &fe) || fe.Field != "max_tokens" {
		t.Fatalf("max_tokens 10: %v, want a field error", err)
	}
	var least int64
	if _, serr := fmt.Sscanf(fe.Msg[strings.Index(fe.Msg, "at least ")+len("at least "):], "%d", &least); serr != nil || least <= 10 {
		t.Fatalf("no smallest figure in %q", fe.Msg)
	}
	if _, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "q", MaxTokens: least - 1}); err == nil {
		t.Errorf("max_tokens %d (one less than the figure given) was accepted", least-1)
	}
	if _, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "q", MaxTokens: least}); err != nil {
		t.Errorf("max_tokens %d, the figure given, was refused: %v", least, err)
	}
	_, _, err = b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "q", MaxCostUSD: 1e-300})
	if !errors.As(err, &fe) || fe.Field != "max_cost_usd" || !strings.Contains(fe.Msg, "rounds to $0") {
		t.Fatalf("max_cost_usd 1e-300: %v, want it refused as rounding to nothing", err)
	}
}

// A report cut off at the completion cap is not taken for the report: the
// model is told what happened and writes it again; a refusal gets one more
// turn, and a second refusal in a row ends the run with it.
func TestCutReportsAndRefusalsAreToldToTheModel(t *testing.T) {
	t.Parallel()
	var notes []string
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == llm.RoleUser && turns(req) > 0 {
			notes = append(notes, req.Messages[n-1].Content)
		}
		return llm.Message{Content: "report"}, nil
	}}
	cut := &finishModel{inner: model, reasons: []string{llm.FinishLength}}
	b := setup(t, setupOpts{model: cut})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Steps != 2 || len(notes) != 1 || !strings.Contains(notes[0], "cut off") {
		t.Fatalf("%s after %d steps %q; notes %q: want the cut report written again", done.Status, done.Steps, done.Error, notes)
	}

	refusing := &finishModel{inner: &scriptModel{fn: func(context.Context, llm.Request) (llm.Message, error) {
		return llm.Message{Content: "I can't help with that."}, nil
	}}, refuse: true}
	b2 := setup(t, setupOpts{model: refusing})
	run, _, err = b2.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b2.userID, Topic: "q"})
	if err != nil {
		t.Fatal(err)
	}
	done = waitEnded(t, b2.pool, run.ID, 30*time.Second)
	if done.Status != jobs.StatusFailed || done.Steps != 1 || !strings.Contains(done.Error, "declined") {
		t.Fatalf("%s after %d steps %q: want the run failed on the second refusal", done.Status, done.Steps, done.Error)
	}
}

// finishModel passes on another model's answers with the finish reasons
// given, one per call (then "stop"), or marks them refusals.
type finishModel struct {
	inner   llm.Model
	reasons []string
	refuse  bool
	calls   int
}

func (m *finishModel) Name() string { return m.inner.Name() }

func (m *finishModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := m.inner.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	resp.FinishReason = llm.FinishStop
	if m.calls < len(m.reasons) {
		resp.FinishReason = m.reasons[m.calls]
	}
	m.calls++
	resp.Refused = m.refuse
	return resp, nil
}
