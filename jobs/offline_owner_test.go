package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// The offline policy asks the owner of an interactive research which
// aspect to focus on, and its searches and report follow the answer: the
// same topic answered two ways cites the package each answer names.
func TestOfflineResearchAsksItsOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	const topic = "How do goroutines wait for one another?"
	answers := map[string]string{"sync.WaitGroup": "package sync", "context.Context cancellation": "package context"}
	reports := map[string]string{}
	for answer, cited := range answers {
		root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: topic, Interactive: true})
		if err != nil {
			t.Fatal(err)
		}
		asked := waitRun(t, b.pool, root.ID, "to ask its owner", (*jobs.Run).WaitsForAnswer)
		if !strings.Contains(asked.Question, topic) || !strings.Contains(asked.Question, "focus on") {
			t.Errorf("question: %q", asked.Question)
		}
		if _, err := b.agent.Answer(ctx, b.userID, root.ID, answer); err != nil {
			t.Fatal(err)
		}
		done := waitEnded(t, b.pool, root.ID, 60*time.Second)
		if done.Status != jobs.StatusSucceeded {
			t.Fatalf("root %s: %s", done.Status, done.Error)
		}
		if !strings.Contains(done.Report, "answered: "+answer) || !strings.Contains(done.Report, "not a language model") {
			t.Errorf("the report does not say the answer %q:\n%s", answer, done.Report)
		}
		srcs := done.Report[strings.Index(done.Report, "## Sources"):]
		for _, other := range answers {
			if got := strings.Contains(srcs, other); got != (other == cited) {
				t.Errorf("answered %q, the report cites %s: %t, want %t:\n%s", answer, other, got, other == cited, done.Report)
			}
		}
		reports[answer] = done.Report
		if n := countEvents(t, b.pool, root.ID, jobs.EventAnswered); n != 1 {
			t.Errorf("%d answered events, want 1", n)
		}
	}
	if reports["sync.WaitGroup"] == reports["context.Context cancellation"] {
		t.Error("two answers made the same report")
	}
}

// An interactive offline research whose question's deadline passes goes
// on without an answer and succeeds.
func TestOfflineResearchGoesOnWithoutAnAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "How does sync.Once work?",
		Interactive: true, AnswerTimeoutSeconds: jobs.MinAnswerTimeoutSeconds})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, b.pool, root.ID, "to ask its owner", (*jobs.Run).WaitsForAnswer)
	done := waitEnded(t, b.pool, root.ID, 60*time.Second)
	if done.Status != jobs.StatusSucceeded || strings.Contains(done.Report, "answered:") ||
		!strings.Contains(done.Report, "package sync") {
		t.Fatalf("root %s (%s):\n%s", done.Status, done.Error, done.Report)
	}
}

// An offline research started with approve_plan proposes the sub-agents
// of its topic's facets; approved, they run and the root merges their
// reports; rejected, the root researches alone.
func TestOfflineResearchProposesAPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		decision, topic string
	}{
		{jobs.DecisionApprove, "How do goroutines and channels synchronize work, and how does the context package carry cancellation?"},
		{jobs.DecisionApprove, "How does sync.WaitGroup work?"},
		{jobs.DecisionReject, "How does sync.WaitGroup work?"},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{})
			ctx := context.Background()
			root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: tc.topic, ApprovePlan: true})
			if err != nil {
				t.Fatal(err)
			}
			proposed := waitRun(t, b.pool, root.ID, "to propose its plan", (*jobs.Run).WaitsForPlan)
			subs := proposed.Plan.Subagents
			if len(subs) < 2 {
				t.Fatalf("plan of %d sub-agents, want one a facet (2 or more)", len(subs))
			}
			for _, s := range subs {
				if s.Name == "" || s.Reason == "" || s.Task == "" {
					t.Errorf("planned sub-agent %+v", s)
				}
			}
			if _, err := b.agent.DecidePlan(ctx, b.userID, root.ID, jobs.PlanDecision{Decision: tc.decision}); err != nil {
				t.Fatal(err)
			}
			done := waitEnded(t, b.pool, root.ID, 90*time.Second)
			if done.Status != jobs.StatusSucceeded {
				t.Fatalf("root %s: %s", done.Status, done.Error)
			}
			tree, err := jobs.Tree(ctx, b.pool, root.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if tc.decision == jobs.DecisionApprove {
				want += len(subs)
			}
			if len(tree) != want {
				t.Fatalf("tree of %d runs after %s, want %d", len(tree), tc.decision, want)
			}
			for i, kid := range tree[1:] {
				if kid.Name != subs[i].Name || kid.Status != jobs.StatusSucceeded {
					t.Errorf("sub-agent %s: %s, want %s succeeded", kid.Name, kid.Status, subs[i].Name)
				}
				if !strings.Contains(done.Report, "### "+kid.Name) {
					t.Errorf("root report does not merge %s's report", kid.Name)
				}
			}
			if !strings.Contains(done.Report, "## Sources") {
				t.Errorf("report:\n%s", done.Report)
			}
		})
	}
}

// waitRun waits up to a minute for run id to be as cond says.
func waitRun(t *testing.T, pool jobs.DB, id int64, what string, cond func(*jobs.Run) bool) *jobs.Run {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		run, err := jobs.GetRun(context.Background(), pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(run) {
			return run
		}
		if run.Ended() || time.Now().After(deadline) {
			t.Fatalf("run %d did not come %s: status %s state %s steps %d (%s)", id, what, run.Status, run.State, run.Steps, run.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An offline research both interactive and with approve_plan asks first,
// then proposes, and its approved sub-agents run.
func TestOfflineResearchAsksThenProposes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "How does sync.WaitGroup work?",
		Interactive: true, ApprovePlan: true})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, b.pool, root.ID, "to ask its owner", (*jobs.Run).WaitsForAnswer)
	if _, err := b.agent.Answer(ctx, b.userID, root.ID, "WaitGroup.Go"); err != nil {
		t.Fatal(err)
	}
	proposed := waitRun(t, b.pool, root.ID, "to propose its plan", (*jobs.Run).WaitsForPlan)
	if _, err := b.agent.DecidePlan(ctx, b.userID, root.ID, jobs.PlanDecision{Decision: jobs.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, root.ID, 90*time.Second)
	tree, err := jobs.Tree(ctx, b.pool, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != jobs.StatusSucceeded || len(tree) != len(proposed.Plan.Subagents)+1 ||
		!strings.Contains(done.Report, "answered: WaitGroup.Go") {
		t.Fatalf("root %s (%s), %d runs for a plan of %d:\n%s", done.Status, done.Error, len(tree),
			len(proposed.Plan.Subagents), done.Report)
	}
}
