package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// These tests park an interactive root on ask_owner and check that it
// holds nothing while it waits and resumes exactly once, by its owner's
// answer or by its deadline.

// asker is a model whose root asks its owner one question, then writes a
// report that quotes what ask_owner answered; the results it saw are kept.
type asker struct {
	mu   sync.Mutex
	seen []string
}

func (m *asker) model() *scriptModel {
	return &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		if turns(req) == 0 {
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("ask_owner", `{"question":"Which Go version?"}`)}}, nil
		}
		got := lastToolResult(req)
		m.mu.Lock()
		m.seen = append(m.seen, got)
		m.mu.Unlock()
		return llm.Message{Content: "answered with: " + got}, nil
	}}
}

// results are the ask_owner results the resumed steps saw.
func (m *asker) results() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen)
}

// startAsker starts an interactive research whose answers wait timeout
// seconds (0: the default) and waits until its root is parked on its
// question.
func startAsker(t *testing.T, b *testBundle, timeout int) *jobs.Run {
	t.Helper()
	root, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "ask",
		Interactive: true, AnswerTimeoutSeconds: timeout})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, fmt.Sprintf("run %d to ask", root.ID), func() bool {
		r, err := jobs.GetRun(context.Background(), b.pool, root.ID)
		return err == nil && r.WaitsForAnswer()
	})
	return root
}

// requireAskerHoldsNothing checks that a parked asker has no step job
// running or ready, only its wake job scheduled at its deadline, and that
// its question shows on it, unless its deadline came first (see
// requireHoldsNothing).
func requireAskerHoldsNothing(t *testing.T, pool *pgxpool.Pool, id int64) {
	t.Helper()
	if !requireHoldsNothing(t, pool, id) {
		return
	}
	r, err := jobs.GetRun(context.Background(), pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != jobs.StatusWaiting || r.State != jobs.StateInputRequired || r.Question != "Which Go version?" ||
		r.AnswerDeadline == nil || !r.Interactive {
		t.Fatalf("parked asker: status %s state %s question %q deadline %v interactive %t",
			r.Status, r.State, r.Question, r.AnswerDeadline, r.Interactive)
	}
	var due bool
	if err := pool.QueryRow(context.Background(), `SELECT bool_and(scheduled_at = $2) FROM river_job
		WHERE kind = $1 AND (args->>'run_id')::bigint = $3`, wakeKind, *r.AnswerDeadline, id).Scan(&due); err != nil || !due {
		t.Errorf("the wake job is not scheduled at the answer deadline %s (%v)", r.AnswerDeadline, err)
	}
}

// requireAnsweredOnce checks that the root resumed once, the way by, with
// one job for its second step, and that the model saw want as ask_owner's
// result once.
func requireAnsweredOnce(t *testing.T, pool *pgxpool.Pool, m *asker, id int64, by, want string) {
	t.Helper()
	if got := jobsFor(t, pool, id, jobs.StepKind, 2); len(got) != 1 {
		t.Errorf("step 2 of run %d has %d jobs, want 1: %v", id, len(got), got)
	}
	var n int
	var data string
	err := pool.QueryRow(context.Background(), `SELECT count(*), coalesce(min(data::text), '') FROM gb_agent_research_events
		WHERE run_id = $1 AND kind = $2`, id, jobs.EventAnswered).Scan(&n, &data)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || !strings.Contains(data, `"by": "`+by+`"`) {
		t.Errorf("run %d was answered %d times (%s), want once by %s", id, n, data, by)
	}
	if n := countEvents(t, pool, id, jobs.EventInputRequired); n != 1 {
		t.Errorf("run %d has %d input_required events, want 1", id, n)
	}
	if got := m.results(); len(got) != 1 || got[0] != want {
		t.Errorf("ask_owner's results were %q, want [%q]", got, want)
	}
}

func TestAskOwnerParksWithNoJobAndConcurrentAnswersResumeItOnce(t *testing.T) {
	t.Parallel()
	const answers = 24
	m := &asker{}
	b := setup(t, setupOpts{model: m.model()})
	ctx := context.Background()
	root := startAsker(t, b, 0)
	requireAskerHoldsNothing(t, b.pool, root.ID)

	start := make(chan struct{})
	errs := make([]error, answers)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = b.agent.Answer(ctx, b.userID, root.ID, fmt.Sprintf("Go 1.%d", i))
		}()
	}
	close(start)
	wg.Wait()
	winner := ""
	for i, err := range errs {
		switch {
		case err == nil && winner == "":
			winner = fmt.Sprintf("Go 1.%d", i)
		case err == nil:
			t.Errorf("answer %d succeeded after %q did", i, winner)
		case !errors.Is(err, jobs.ErrNotAsking) || !strings.Contains(err.Error(), "answered already"):
			t.Errorf("answer %d: %v, want ErrNotAsking saying it was answered", i, err)
		}
	}
	if winner == "" {
		t.Fatal("no answer succeeded")
	}
	done := waitEnded(t, b.pool, root.ID, 20*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Report != "answered with: "+winner {
		t.Fatalf("root %s %q %q", done.Status, done.Report, done.Error)
	}
	requireAnsweredOnce(t, b.pool, m, root.ID, "owner", winner)
	if got := jobsFor(t, b.pool, root.ID, wakeKind, 0); len(got) != 1 || got[0] != "cancelled" {
		t.Errorf("wake jobs %v, want the one the answer cancelled", got)
	}
	// A wake job that escaped the cancel runs and finds nothing to resume.
	if _, err := b.pool.Exec(ctx, `INSERT INTO river_job (args, kind, queue, state)
		SELECT args, kind, queue, 'available' FROM river_job WHERE kind = $1 AND (args->>'run_id')::bigint = $2`,
		wakeKind, root.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the wake job's copy to run", func() bool {
		got := jobsFor(t, b.pool, root.ID, wakeKind, 0)
		return len(got) == 2 && got[1] == "completed"
	})
	requireAnsweredOnce(t, b.pool, m, root.ID, "owner", winner)
	if _, err := b.agent.Answer(ctx, b.userID, root.ID, "too late"); !errors.Is(err, jobs.ErrNotAsking) {
		t.Errorf("an answer to the ended root: %v, want ErrNotAsking", err)
	}
}

func TestAskOwnerDeadlineResumesOnceAndALateAnswerIsRefused(t *testing.T) {
	t.Parallel()
	m := &asker{}
	b := setup(t, setupOpts{model: m.model()})
	ctx := context.Background()
	root := startAsker(t, b, jobs.MinAnswerTimeoutSeconds)
	requireAskerHoldsNothing(t, b.pool, root.ID)
	done := waitEnded(t, b.pool, root.ID, 60*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Report != "answered with: "+jobs.NoAnswerNote {
		t.Fatalf("root %s %q %q", done.Status, done.Report, done.Error)
	}
	requireAnsweredOnce(t, b.pool, m, root.ID, "deadline", jobs.NoAnswerNote)
	if got := jobsFor(t, b.pool, root.ID, wakeKind, 0); len(got) != 1 || got[0] != "completed" {
		t.Errorf("wake jobs %v, want one completed", got)
	}
	_, err := b.agent.Answer(ctx, b.userID, root.ID, "Go 1.26")
	if !errors.Is(err, jobs.ErrNotAsking) || !strings.Contains(err.Error(), "deadline passed") {
		t.Errorf("an answer after the deadline: %v, want ErrNotAsking saying the deadline passed", err)
	}
	requireAnsweredOnce(t, b.pool, m, root.ID, "deadline", jobs.NoAnswerNote)
}

// An answer to a root that has asked nothing is refused, and so is an
// answer that is no text Postgres can store within the bound.
func TestAnswerRefusedWhileTheRootIsNotAsking(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWork: true})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "ask", Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.agent.Answer(ctx, b.userID, root.ID, "early")
	if !errors.Is(err, jobs.ErrNotAsking) || !strings.Contains(err.Error(), "asked no question") {
		t.Errorf("an answer to a root that asked nothing: %v", err)
	}
	var fe *jobs.FieldError
	for _, text := range []string{"", "  ", strings.Repeat("x", jobs.MaxAnswerLen+1), "a\x00b"} {
		if _, err := b.agent.Answer(ctx, b.userID, root.ID, text); !errors.As(err, &fe) || fe.Field != "text" {
			t.Errorf("answer %.20q: %v, want a FieldError for text", text, err)
		}
	}
}

func TestAnswerToAnotherUsersRunIsNotFound(t *testing.T) {
	t.Parallel()
	m := &asker{}
	b := setup(t, setupOpts{model: m.model()})
	ctx := context.Background()
	root := startAsker(t, b, 0)
	other := newUser(t, b.pool, "mallory")
	if _, err := b.agent.Answer(ctx, other, root.ID, "not yours"); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("another user's answer: %v, want ErrNotFound", err)
	}
	if _, err := b.agent.Answer(ctx, b.userID, root.ID+1000, "no such run"); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("an answer to no run: %v, want ErrNotFound", err)
	}
	requireAskerHoldsNothing(t, b.pool, root.ID)
	if n := countEvents(t, b.pool, root.ID, jobs.EventAnswered); n != 0 {
		t.Errorf("the root was answered %d times by refused answers", n)
	}
}

// Only an interactive root is given ask_owner and the prompt that says when
// to ask; its sub-agents and other roots are not.
func TestAskOwnerIsOfferedToInteractiveRootsOnly(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	offered := map[string]bool{}
	prompted := map[string]bool{}
	model := &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		mu.Lock()
		for _, tool := range req.Tools {
			offered[topic(req)] = offered[topic(req)] || tool.Name == "ask_owner"
		}
		prompted[topic(req)] = strings.Contains(req.System, "`ask_owner`")
		mu.Unlock()
		if topic(req) == "sub" {
			return llm.Message{Content: "sub report"}, nil
		}
		return rootTurn(req, spawnCall("helper", "sub"))
	}}
	b := setup(t, setupOpts{model: model})
	ctx := context.Background()
	for _, p := range []jobs.StartParams{{Topic: "interactive", Interactive: true}, {Topic: "plain"}} {
		p.UserID = b.userID
		run, _, err := b.agent.StartResearch(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if done := waitEnded(t, b.pool, run.ID, 30*time.Second); done.Status != jobs.StatusSucceeded {
			t.Fatalf("%s: %s %q", p.Topic, done.Status, done.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]bool{"interactive": true, "plain": false, "sub": false}
	for name, w := range want {
		if offered[name] != w || prompted[name] != w {
			t.Errorf("%s: offered ask_owner %t, told when to ask %t; want %t", name, offered[name], prompted[name], w)
		}
	}
}

func TestAskOwnerStartParamsAreChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p  jobs.StartParams
		ok bool
	}{
		{jobs.StartParams{Topic: "t", Interactive: true}, true},
		{jobs.StartParams{Topic: "t", Interactive: true, AnswerTimeoutSeconds: jobs.MinAnswerTimeoutSeconds}, true},
		{jobs.StartParams{Topic: "t", Interactive: true, AnswerTimeoutSeconds: jobs.MaxAnswerTimeoutSeconds}, true},
		{jobs.StartParams{Topic: "t", Interactive: true, AnswerTimeoutSeconds: jobs.MinAnswerTimeoutSeconds - 1}, false},
		{jobs.StartParams{Topic: "t", Interactive: true, AnswerTimeoutSeconds: jobs.MaxAnswerTimeoutSeconds + 1}, false},
		{jobs.StartParams{Topic: "t", Interactive: true, AnswerTimeoutSeconds: -1}, false},
		{jobs.StartParams{Topic: "t", AnswerTimeoutSeconds: 60}, false},
	} {
		err := tc.p.Validate()
		var fe *jobs.FieldError
		if tc.ok != (err == nil) || (err != nil && (!errors.As(err, &fe) || fe.Field != "answer_timeout_seconds")) {
			t.Errorf("%+v: %v, want ok %t or a FieldError for answer_timeout_seconds", tc.p, err, tc.ok)
		}
	}
}

// The webhook of a root's owner hears that it waits for an answer, once per
// question, in the transaction that parks it.
func TestAskOwnerInsertsTheInputRequiredWebhook(t *testing.T) {
	t.Parallel()
	m := &asker{}
	b := setup(t, setupOpts{model: m.model()})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "ask", Interactive: true,
		WebhookURL: "https://hooks.example.com/gb"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the root to ask", func() bool {
		r, err := jobs.GetRun(ctx, b.pool, root.ID)
		return err == nil && r.WaitsForAnswer()
	})
	var events []string
	rows, err := b.pool.Query(ctx, `SELECT event FROM gb_webhook_deliveries WHERE run_id = $1 ORDER BY id`, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	if rows.Err() != nil || len(events) != 1 || events[0] != jobs.WebhookInputRequired {
		t.Errorf("deliveries %v (%v), want one %s", events, rows.Err(), jobs.WebhookInputRequired)
	}
}

func TestParkedAskerThatLostItsWakeJobIsRepaired(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	b := setupOn(t, pool, setupOpts{noWork: true})
	ctx := context.Background()
	start := func() *jobs.Run {
		r, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "ask", Interactive: true})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	late, early := start(), start()
	// Both parked on ask_owner, one past its deadline, and neither has a job
	// left but a wake job of an earlier wait.
	for _, q := range []string{
		`UPDATE gb_agent_research_runs SET status = 'waiting', state = 'input_required', steps = 1, wait_call_id = 'c1',
			wait_kind = 'owner', question = 'q?', wait_until = now() - interval '1 second' WHERE id = $1 AND $2::bigint > 0`,
		`UPDATE gb_agent_research_runs SET status = 'waiting', state = 'input_required', steps = 1, wait_call_id = 'c1',
			wait_kind = 'owner', question = 'q?', wait_until = now() + interval '1 hour' WHERE id = $2 AND $1::bigint > 0`,
		`DELETE FROM river_job WHERE $1::bigint > 0 AND $2::bigint > 0`,
		`INSERT INTO river_job (args, kind, queue, state, scheduled_at)
			SELECT jsonb_build_object('run_id', $2::bigint, 'step', 0, 'call_id', 'c0'), '` + wakeKind + `', 'default',
				'scheduled', now() + interval '1 hour' WHERE $1::bigint > 0`,
	} {
		if _, err := pool.Exec(ctx, q, late.ID, early.ID); err != nil {
			t.Fatal(err)
		}
	}
	res, err := b.agent.Maintain(ctx, jobs.MaintainParams{})
	if err != nil || res.Resumed != 1 || res.Repaired != 1 {
		t.Fatalf("maintain: %+v %v", res, err)
	}
	if r, _ := jobs.GetRun(ctx, pool, late.ID); r.Status != jobs.StatusWorking || r.Question != "" {
		t.Errorf("the asker past its deadline is %s with question %q", r.Status, r.Question)
	}
	if got := jobsFor(t, pool, late.ID, jobs.StepKind, 2); len(got) != 1 || got[0] != "available" {
		t.Errorf("the resumed asker's jobs %v", got)
	}
	if n := countEvents(t, pool, late.ID, jobs.EventAnswered); n != 1 {
		t.Errorf("the resumed asker was answered %d times, want once (by its deadline)", n)
	}
	if r, _ := jobs.GetRun(ctx, pool, early.ID); !r.WaitsForAnswer() || r.Question != "q?" {
		t.Errorf("the asker before its deadline is %s, question %q", r.Status, r.Question)
	}
	if got := jobsFor(t, pool, early.ID, wakeKind, 1); len(got) != 1 || got[0] != "scheduled" {
		t.Errorf("the waiting asker's wake jobs %v", got)
	}
	for _, id := range []int64{late.ID, early.ID} {
		if countEvents(t, pool, id, jobs.EventRepaired) != 1 {
			t.Errorf("the repair of run %d was not recorded", id)
		}
	}
	if res, err = b.agent.Maintain(ctx, jobs.MaintainParams{}); err != nil || res.Resumed != 0 || res.Repaired != 0 {
		t.Fatalf("second maintain repaired again: %+v %v", res, err)
	}
}
