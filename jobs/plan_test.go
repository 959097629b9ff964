package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// These tests park a root started with approve_plan on its propose_plan
// call and check that it spawns nothing before its owner's decision, is
// resumed once by it or by the deadline, and then spawns exactly what was
// approved.

// planner is a model whose root first tries to spawn (refused), then
// proposes alpha and beta; after a rejection it proposes gammaN, after an
// approval it spawns every approved name and "intruder", waits for them
// and reports. Sub-agents report at once. The propose_plan and
// spawn_subagent results the root saw are kept.
type planner struct {
	mu   sync.Mutex
	seen []string
}

var approvedName = regexp.MustCompile(`(?m)^- ([A-Za-z0-9_-]+) \(`)

func (m *planner) model() *scriptModel {
	return &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		if !strings.HasPrefix(topic(req), "plan") {
			return llm.Message{Content: "sub report"}, nil
		}
		if turns(req) == 0 {
			return llm.Message{ToolCalls: []llm.ToolCall{spawnCall("alpha", "early")}}, nil
		}
		got := lastToolResult(req)
		m.mu.Lock()
		m.seen = append(m.seen, got)
		n := len(m.seen)
		m.mu.Unlock()
		switch {
		case strings.Contains(got, "propose your plan first"):
			return llm.Message{ToolCalls: []llm.ToolCall{proposeCall("alpha", "beta")}}, nil
		case strings.Contains(got, "no proposals left"):
			return llm.Message{Content: "gave up"}, nil
		case strings.Contains(got, "proposals left"):
			return llm.Message{ToolCalls: []llm.ToolCall{proposeCall(fmt.Sprintf("gamma%d", n))}}, nil
		case strings.HasPrefix(got, "Your owner approved"):
			var calls []llm.ToolCall
			for _, match := range approvedName.FindAllStringSubmatch(got, -1) {
				calls = append(calls, spawnCall(match[1], "mine"))
			}
			return llm.Message{ToolCalls: append(calls, spawnCall("intruder", "not approved"))}, nil
		case got == jobs.NoPlanDecisionNote:
			return llm.Message{Content: "no plan"}, nil
		case strings.Contains(got, "is not in your approved plan"):
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
		}
		return llm.Message{Content: "root report"}, nil
	}}
}

// results are the tool results the root's steps saw, in order.
func (m *planner) results() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen)
}

func proposeCall(names ...string) llm.ToolCall {
	var subs []string
	for _, n := range names {
		subs = append(subs, fmt.Sprintf(`{"name":%q,"reason":"covers %s","task":"task of %s"}`, n, n, n))
	}
	return toolCall("propose_plan", `{"subagents":[`+strings.Join(subs, ",")+`]}`)
}

// startPlanner starts a research that must have its plan approved and
// waits until its root is parked on its plan.
func startPlanner(t *testing.T, b *testBundle, timeout int) *jobs.Run {
	t.Helper()
	root, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "plan",
		ApprovePlan: true, AnswerTimeoutSeconds: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return waitPlanParked(t, b.pool, root.ID, 1)
}

// waitPlanParked waits until the root is parked on its proposal-th plan.
func waitPlanParked(t *testing.T, pool *pgxpool.Pool, id int64, proposal int) *jobs.Run {
	t.Helper()
	var run *jobs.Run
	waitFor(t, 20*time.Second, fmt.Sprintf("run %d to propose plan %d", id, proposal), func() bool {
		r, err := jobs.GetRun(context.Background(), pool, id)
		run = r
		return err == nil && r.WaitsForPlan() && countEvents(t, pool, id, jobs.EventPlanProposed) == proposal
	})
	requireHoldsNothing(t, pool, id)
	if run.State != jobs.StateInputRequired || run.Plan == nil || run.Plan.State != jobs.PlanProposed ||
		run.Plan.Deadline == nil || run.Question != "" || run.WaitsForAnswer() {
		t.Fatalf("parked planner: state %s plan %+v question %q", run.State, run.Plan, run.Question)
	}
	return run
}

// childNames are the names of root's sub-agents, sorted.
func childNames(t *testing.T, pool *pgxpool.Pool, rootID int64) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT name FROM gb_agent_research_runs WHERE parent_id = $1 ORDER BY name`, rootID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func TestPlanParksWithNoJobAndOneOfConcurrentEditedApprovalsSpawnsExactlyItsNames(t *testing.T) {
	t.Parallel()
	const decisions = 24
	m := &planner{}
	b := setup(t, setupOpts{model: m.model()})
	ctx := context.Background()
	root := startPlanner(t, b, 0)
	if names := []string{root.Plan.Subagents[0].Name, root.Plan.Subagents[1].Name}; len(root.Plan.Subagents) != 2 ||
		names[0] != "alpha" || names[1] != "beta" {
		t.Fatalf("proposed plan %+v", root.Plan.Subagents)
	}
	if got := childNames(t, b.pool, root.ID); len(got) != 0 {
		t.Fatalf("sub-agents spawned before the plan was approved: %v", got)
	}

	start := make(chan struct{})
	errs := make([]error, decisions)
	var wg sync.WaitGroup
	for i := range decisions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = b.agent.DecidePlan(ctx, b.userID, root.ID, jobs.PlanDecision{Decision: jobs.DecisionApprove,
				Note: "narrower", Subagents: []jobs.SpawnParams{
					{Name: fmt.Sprintf("edit%d", i), Reason: "edited", Task: "edited task"},
					{Name: "beta", Reason: "kept", Task: "task of beta", MaxSteps: 3}}})
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Errorf("decision %d succeeded after %d did", i, winner)
		case !errors.Is(err, jobs.ErrNotProposing) || !strings.Contains(err.Error(), "approved already"):
			t.Errorf("decision %d: %v, want ErrNotProposing saying it was approved", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no decision succeeded")
	}
	done := waitEnded(t, b.pool, root.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Report != "root report" {
		t.Fatalf("root %s %q %q", done.Status, done.Report, done.Error)
	}
	want := []string{"beta", fmt.Sprintf("edit%d", winner)}
	if got := childNames(t, b.pool, root.ID); !slices.Equal(got, want) {
		t.Errorf("sub-agents %v, want exactly the approved %v", got, want)
	}
	if done.Plan == nil || done.Plan.State != jobs.PlanApproved || done.Plan.Note != "narrower" ||
		len(done.Plan.Subagents) != 2 || done.Plan.Subagents[0].Name != want[1] {
		t.Errorf("plan after approval %+v", done.Plan)
	}
	if n := countEvents(t, b.pool, root.ID, jobs.EventPlanDecided); n != 1 {
		t.Errorf("the plan was decided %d times, want once", n)
	}
	seen := strings.Join(m.results(), "\n")
	for _, w := range []string{"propose your plan first", "- " + want[1] + " (researcher, 10 steps): edited task",
		"- beta (researcher, 3 steps)", "note: narrower", `"intruder" is not in your approved plan; you may spawn only: ` +
			want[1] + ", beta"} {
		if !strings.Contains(seen, w) {
			t.Errorf("the root never saw %q in %q", w, seen)
		}
	}
}

func TestPlanRejectedIsProposedAgainAtMostThreeTimes(t *testing.T) {
	t.Parallel()
	m := &planner{}
	b := setup(t, setupOpts{model: m.model()})
	ctx := context.Background()
	root := startPlanner(t, b, 0)
	for proposal := 1; proposal <= jobs.MaxPlanProposals; proposal++ {
		if proposal > 1 {
			run := waitPlanParked(t, b.pool, root.ID, proposal)
			if len(run.Plan.Subagents) != 1 || !strings.HasPrefix(run.Plan.Subagents[0].Name, "gamma") {
				t.Fatalf("proposal %d: %+v", proposal, run.Plan.Subagents)
			}
		}
		run, err := b.agent.DecidePlan(ctx, b.userID, root.ID, jobs.PlanDecision{Decision: jobs.DecisionReject,
			Note: fmt.Sprintf("too broad %d", proposal)})
		if err != nil {
			t.Fatal(err)
		}
		if run.Plan.State != jobs.PlanRejected || run.WaitsForPlan() {
			t.Fatalf("after rejection %d: %+v", proposal, run.Plan)
		}
	}
	done := waitEnded(t, b.pool, root.ID, 30*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Report != "gave up" {
		t.Fatalf("root %s %q %q", done.Status, done.Report, done.Error)
	}
	if got := childNames(t, b.pool, root.ID); len(got) != 0 {
		t.Errorf("sub-agents %v spawned without an approved plan", got)
	}
	got := m.results()
	if len(got) != 4 || !strings.Contains(got[1], "2 proposals left") || !strings.Contains(got[1], "too broad 1") ||
		!strings.Contains(got[2], "1 proposals left") || !strings.Contains(got[3], "no proposals left") {
		t.Errorf("results %q", got)
	}
	if n := countEvents(t, b.pool, root.ID, jobs.EventPlanProposed); n != jobs.MaxPlanProposals {
		t.Errorf("%d plans proposed, want %d", n, jobs.MaxPlanProposals)
	}
}

func TestPlanDeadlineGoesOnWithoutSubagents(t *testing.T) {
	t.Parallel()
	m := &planner{}
	b := setup(t, setupOpts{model: m.model()})
	ctx := context.Background()
	root := startPlanner(t, b, jobs.MinAnswerTimeoutSeconds)
	done := waitEnded(t, b.pool, root.ID, 60*time.Second)
	if done.Status != jobs.StatusSucceeded || done.Report != "no plan" {
		t.Fatalf("root %s %q %q", done.Status, done.Report, done.Error)
	}
	if done.Plan == nil || done.Plan.State != jobs.PlanExpired || len(childNames(t, b.pool, root.ID)) != 0 {
		t.Errorf("plan %+v, sub-agents %v", done.Plan, childNames(t, b.pool, root.ID))
	}
	_, err := b.agent.DecidePlan(ctx, b.userID, root.ID, jobs.PlanDecision{Decision: jobs.DecisionApprove})
	if !errors.Is(err, jobs.ErrNotProposing) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("a decision after the deadline: %v, want ErrNotProposing saying it expired", err)
	}
	if n := countEvents(t, b.pool, root.ID, jobs.EventPlanDecided); n != 1 {
		t.Errorf("the plan was decided %d times, want once (by its deadline)", n)
	}
}

func TestPlanDecisionOfAnotherUserIsNotFoundAndBadDecisionsAreRefused(t *testing.T) {
	t.Parallel()
	m := &planner{}
	b := setup(t, setupOpts{model: m.model()})
	ctx := context.Background()
	root := startPlanner(t, b, 0)
	other := newUser(t, b.pool, "mallory")
	approve := jobs.PlanDecision{Decision: jobs.DecisionApprove}
	if _, err := b.agent.DecidePlan(ctx, other, root.ID, approve); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("another user's decision: %v, want ErrNotFound", err)
	}
	for _, tc := range []struct {
		d     jobs.PlanDecision
		field string
	}{
		{jobs.PlanDecision{Decision: "maybe"}, "decision"},
		{jobs.PlanDecision{Decision: jobs.DecisionReject, Subagents: []jobs.SpawnParams{}}, "subagents"},
		{jobs.PlanDecision{Decision: jobs.DecisionApprove, Subagents: []jobs.SpawnParams{}}, "subagents"},
		{jobs.PlanDecision{Decision: jobs.DecisionApprove, Subagents: []jobs.SpawnParams{
			{Name: "a", Reason: "r", Task: "t"}, {Name: "a", Reason: "r", Task: "t"}}}, "subagents"},
		{jobs.PlanDecision{Decision: jobs.DecisionApprove, Subagents: []jobs.SpawnParams{{Name: "bad name", Reason: "r", Task: "t"}}}, "subagents"},
		{jobs.PlanDecision{Decision: jobs.DecisionApprove, Note: strings.Repeat("x", jobs.MaxPlanNoteLen+1)}, "note"},
	} {
		var fe *jobs.FieldError
		if _, err := b.agent.DecidePlan(ctx, b.userID, root.ID, tc.d); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: %v, want a FieldError for %s", tc.d, err, tc.field)
		}
	}
	waitPlanParked(t, b.pool, root.ID, 1)
	if n := countEvents(t, b.pool, root.ID, jobs.EventPlanDecided); n != 0 {
		t.Errorf("refused decisions decided the plan %d times", n)
	}
	plain, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.agent.DecidePlan(ctx, b.userID, plain.ID, approve); !errors.Is(err, jobs.ErrNotProposing) ||
		!strings.Contains(err.Error(), "approve_plan") {
		t.Errorf("a decision on a research without approve_plan: %v", err)
	}
}
