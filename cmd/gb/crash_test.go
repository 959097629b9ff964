package main

import (
	"context"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// TestWorkerKilledMidStep starts a research whose root spawns three
// sub-agents, SIGKILLs the worker process while sub-agents are in the middle
// of a step, starts a new worker, and checks that the whole tree completes
// with every step recorded exactly once and each parent resumed once.
func TestWorkerKilledMidStep(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts worker processes and waits for River's rescuer")
	}
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	pool, err := db.Open(ctx, db.PoolConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	bin := buildGB(t)

	loadTopicDocs(t, pool)
	if _, err := jobs.CreateKey(ctx, pool, "crash"); err != nil {
		t.Fatal(err)
	}
	uid, err := jobs.UserID(ctx, pool, "crash")
	if err != nil {
		t.Fatal(err)
	}
	inserter, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	root, _, err := inserter.StartResearch(ctx, jobs.StartParams{UserID: uid, Topic: demoTopic})
	if err != nil {
		t.Fatal(err)
	}

	first := startWorker(t, bin, url)
	// Wait until a sub-agent is thinking in a step after its first: its
	// model call is under way and nothing of the step is committed.
	waitFor(t, 60*time.Second, "a sub-agent mid-step", func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_runs
			WHERE parent_id IS NOT NULL AND state = 'thinking' AND steps >= 1`).Scan(&n)
		return n > 0
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	var running int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'running'").Scan(&running); err != nil {
		t.Fatal(err)
	}
	if running == 0 {
		t.Fatal("no job was left running by the killed worker: the kill did not land mid-step")
	}

	second := startWorker(t, bin, url)
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	defer func() {
		if t.Failed() {
			dumpTree(t, pool, root.ID)
		}
	}()
	waitFor(t, 120*time.Second, "the tree to end", func() bool {
		r, err := jobs.GetRun(ctx, pool, root.ID)
		return err == nil && r.Ended()
	})
	checkTreeExactlyOnce(t, pool, root.ID)
}

func checkTreeExactlyOnce(t *testing.T, pool *pgxpool.Pool, rootID int64) {
	t.Helper()
	ctx := context.Background()
	tree, err := jobs.Tree(ctx, pool, rootID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) < 3 {
		t.Fatalf("tree has %d runs, want a root and sub-agents", len(tree))
	}
	for _, r := range tree {
		if r.Status != jobs.StatusSucceeded {
			t.Errorf("run %d (%s) ended %s: %s", r.ID, r.Name, r.Status, r.Error)
		}
		var rows, maxStep int
		if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(max(step), 0) FROM gb_agent_research_steps
			WHERE run_id = $1`, r.ID).Scan(&rows, &maxStep); err != nil {
			t.Fatal(err)
		}
		if rows != r.Steps || maxStep != r.Steps {
			t.Errorf("run %d: steps %d, conversation rows %d, last step %d", r.ID, r.Steps, rows, maxStep)
		}
		var resumed int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_events
			WHERE run_id = $1 AND kind = 'resumed'`, r.ID).Scan(&resumed); err != nil {
			t.Fatal(err)
		}
		var waits int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_events
			WHERE run_id = $1 AND kind = 'waiting'`, r.ID).Scan(&waits); err != nil {
			t.Fatal(err)
		}
		if resumed != waits {
			t.Errorf("run %d parked %d times but resumed %d times", r.ID, waits, resumed)
		}
		if r.ParentID == nil && resumed != 1 {
			t.Errorf("root resumed %d times, want 1", resumed)
		}
	}
	var open int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE finalized_at IS NULL").Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Errorf("%d jobs left unfinished", open)
	}
}

// dumpTree logs the runs and jobs of a tree, to tell why it did not end.
func dumpTree(t *testing.T, pool *pgxpool.Pool, rootID int64) {
	ctx := context.Background()
	tree, _ := jobs.Tree(ctx, pool, rootID)
	for _, r := range tree {
		t.Logf("run %d %s: %s/%s steps %d error %q", r.ID, r.Name, r.Status, r.State, r.Steps, r.Error)
	}
	rows, err := pool.Query(ctx, "SELECT id, state, attempt, args::text, coalesce(errors::text, '') FROM river_job ORDER BY id")
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var attempt int
		var state, args, errs string
		_ = rows.Scan(&id, &state, &attempt, &args, &errs)
		t.Logf("job %d %s attempt %d %s %.300s", id, state, attempt, args, errs)
	}
}

func buildGB(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gb")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("building gb: %v\n%s", err, out)
	}
	return bin
}

// startWorker runs `gb worker` as a separate process with slow offline
// model calls, so a kill lands in the middle of a step.
func startWorker(t *testing.T, bin, url string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "worker")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "GB_OFFLINE_DELAY=300ms", "GB_STEP_TIMEOUT=2s",
		"OPENAI_API_KEY=", "GB_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loadTopicDocs loads the Go sources of context, sync and net/http into the
// default dataset: what the demo topic's sub-agents search.
func loadTopicDocs(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	src := filepath.Join(build.Default.GOROOT, "src")
	docs, err := kb.FromPaths([]string{filepath.Join(src, "context"), filepath.Join(src, "sync"), filepath.Join(src, "net/http")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Load(context.Background(), pool, jobs.DefaultDataset, docs); err != nil {
		t.Fatal(err)
	}
}
