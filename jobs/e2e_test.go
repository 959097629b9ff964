package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/messenger"
)

// TestOfflineResearchTree runs the offline policy on a three-part question
// with the Postgres messenger: the root spawns a sub-agent per part, they
// message each other, and the root merges their reports.
func TestOfflineResearchTree(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.NewPool(t)
		offlineTree(t, pool, withMessenger(t, pool), true)
	})
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		offlineTree(t, dbtest.NewPool(t), messenger.Detach(messenger.NewChanMessenger()), false)
	})
}

func offlineTree(t *testing.T, pool *pgxpool.Pool, msgr jobs.Messenger, transcript bool) {
	ctx := context.Background()
	b := setupOn(t, pool, setupOpts{msgr: msgr})
	root, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID,
		Topic: "How do goroutines and channels synchronize work, and how does the context package carry " +
			"cancellation, and how does net/http serve requests?"})
	if err != nil {
		t.Fatal(err)
	}
	done := waitEnded(t, b.pool, root.ID, 60*time.Second)
	if done.Status != jobs.StatusSucceeded {
		t.Fatalf("root %s: %s", done.Status, done.Error)
	}
	tree, err := jobs.Tree(ctx, b.pool, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != 4 {
		t.Fatalf("tree has %d runs, want a root and 3 sub-agents", len(tree))
	}
	for _, kid := range tree[1:] {
		if kid.Status != jobs.StatusSucceeded || kid.Reason == "" {
			t.Errorf("sub-agent %s: %s, reason %q", kid.Name, kid.Status, kid.Reason)
		}
		if !strings.Contains(done.Report, "### "+kid.Name) {
			t.Errorf("root report does not merge %s's report", kid.Name)
		}
	}
	if !strings.Contains(done.Report, "https://pkg.go.dev/") || !strings.Contains(done.Report, "not a language model") {
		t.Errorf("report:\n%s", done.Report)
	}
	var sent int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_events WHERE root_id = $1 AND kind = 'message'`,
		root.ID).Scan(&sent); err != nil || sent == 0 {
		t.Fatalf("no sibling sent a message (%v)", err)
	}
	if !transcript {
		return // an in-memory messenger keeps no transcript
	}
	msgs, err := b.agent.Transcript(ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != sent {
		t.Fatalf("%d messages in the transcript, %d sent", len(msgs), sent)
	}
	for _, m := range msgs {
		if m.ReadAt == nil {
			t.Errorf("message %d to %s was never read", m.ID, m.To)
		}
	}
}
