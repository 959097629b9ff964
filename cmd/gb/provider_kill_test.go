package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/openai"
	"github.com/gbresearch/gb/infra/openai/openaifake"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/providerbench"
)

// Shape of TestKilledWorkersCountEveryBilledCall.
const (
	providerKillTrees   = 8
	providerKills       = 8
	providerKillLatency = 400 * time.Millisecond
)

// TestKilledWorkersCountEveryBilledCall runs two `gb worker` processes
// against the fake provider, which answers after a delay and bills every
// call it answers whether or not its caller is still there, while a
// killer SIGKILLs a worker at random instants. When every tree has ended
// and the maintenance pass has settled the calls the dead workers left in
// flight, the ledger holds each call the provider billed exactly once,
// call by call (gb names each call in its X-Client-Request-Id header):
// answered calls with the provider's own tokens, calls cut off by a kill at
// their estimate.
func TestKilledWorkersCountEveryBilledCall(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("runs worker processes that are killed some 8 times, for about a minute")
	}
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	pool, err := db.Open(ctx, db.PoolConfig{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	bin := buildGB(t)
	loadTopicDocs(t, pool)
	fake := openaifake.New(openaifake.Config{Latency: providerKillLatency, Brain: searchingTreeBrain})
	defer fake.Close()

	model, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: openaifake.DefaultAPIKey,
		Model: providerbench.ModelDefault})
	if err != nil {
		t.Fatal(err)
	}
	starter, err := jobs.New(jobs.Deps{Pool: pool, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	var roots []int64
	for i := range providerKillTrees {
		name := fmt.Sprintf("provider-kill-%d", i)
		if _, err := jobs.CreateKey(ctx, pool, name); err != nil {
			t.Fatal(err)
		}
		uid, err := jobs.UserID(ctx, pool, name)
		if err != nil {
			t.Fatal(err)
		}
		run, _, err := starter.StartResearch(ctx, jobs.StartParams{UserID: uid, Topic: fmt.Sprintf("tree %d", i+1), MaxSteps: 4})
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, run.ID)
	}

	env := providerWorkerEnv(url, fake.URL())
	workers := []*exec.Cmd{startProviderWorker(t, bin, env), startProviderWorker(t, bin, env)}
	defer func() {
		for _, w := range workers {
			_ = w.Process.Kill()
			_ = w.Wait()
		}
	}()
	kills := 0
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var open int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_runs WHERE ended_at IS NULL`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
		if kills < providerKills {
			i := rand.IntN(len(workers))
			_ = workers[i].Process.Signal(syscall.SIGKILL)
			_ = workers[i].Wait()
			kills++
			workers[i] = startProviderWorker(t, bin, env)
		}
	}
	// The calls the dead workers left in flight are settled by a live
	// worker's maintenance pass once their job attempts are over.
	var inFlight int
	for time.Now().Before(deadline) {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM gb_model_calls WHERE status = 'reserved'`).Scan(&inFlight); err != nil {
			t.Fatal(err)
		}
		if inFlight == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	var statuses []string
	rows, err := pool.Query(ctx, `SELECT name || ' ' || status || ' ' || error FROM gb_agent_research_runs
		WHERE status <> 'succeeded' OR ended_at IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, s)
	}
	if len(statuses) > 0 || inFlight > 0 {
		t.Fatalf("after %d kills: %d calls still in flight; runs not succeeded: %v", kills, inFlight, statuses)
	}
	l, err := providerbench.ReadLedger(ctx, pool, roots, fake.Calls())
	if err != nil {
		t.Fatal(err)
	}
	s := fake.Stats()
	t.Logf("%d kills; the provider billed %d calls; the ledger counts %d (%d at their estimate, %d of them never billed)",
		kills, s.Billed, l.Billed, l.Estimated, l.EstimatedUnbilled)
	for _, m := range l.Mismatches {
		t.Errorf("ledger: %s", m)
	}
	if l.Billed-l.EstimatedUnbilled != s.Billed {
		t.Errorf("the ledger counts %d billed calls (%d never billed), the provider %d", l.Billed, l.EstimatedUnbilled, s.Billed)
	}
	if kills < providerKills {
		t.Errorf("only %d kills before every tree ended; the test needs %d", kills, providerKills)
	}
}

// providerWorkerEnv is the environment of a worker working against the
// fake provider.
func providerWorkerEnv(dbURL, providerURL string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "DATABASE_URL" || strings.HasPrefix(name, "OPENAI_") || strings.HasPrefix(name, "GB_") ||
			name == "DATABASE_SECRET_ARN" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "DATABASE_URL="+dbURL, "OPENAI_API_KEY="+openaifake.DefaultAPIKey,
		"OPENAI_BASE_URL="+providerURL, "GB_MODEL="+providerbench.ModelDefault, "GB_LOG_LEVEL=warn")
}

// startProviderWorker starts a `gb worker` process.
func startProviderWorker(t *testing.T, bin string, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "worker")
	cmd.Env = env
	log := &lineLog{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a worker: %v", err)
	}
	return cmd
}

// searchingTreeBrain makes trees that search the knowledge base: a root
// spawns three sub-agents, waits and reports; each sub-agent searches
// twice, then reports.
func searchingTreeBrain(req *openaifake.Request) openaifake.Answer {
	var task string
	turns := 0
	for _, m := range req.Messages {
		if m.Role == "user" && task == "" {
			task = m.Content
		}
		if m.Role == "assistant" {
			turns++
		}
	}
	may := len(req.Tools) > 0 && req.ToolChoice != "none"
	switch {
	case !may:
		return openaifake.Answer{Content: "Report on " + task + "."}
	case strings.HasPrefix(task, "part "):
		if turns >= 2 {
			return openaifake.Answer{Content: "Report on " + task + "."}
		}
		return openaifake.Answer{ToolCalls: []openaifake.ToolCall{{ID: fmt.Sprintf("call_search_%d", turns+1),
			Name: "search", Arguments: `{"query":"context cancellation"}`}}}
	case turns == 0:
		var a openaifake.Answer
		for i := 1; i <= 3; i++ {
			a.ToolCalls = append(a.ToolCalls, openaifake.ToolCall{ID: fmt.Sprintf("call_spawn_%d", i), Name: "spawn_subagent",
				Arguments: fmt.Sprintf(`{"name":"part%d","reason":"part %d is its own search","task":"part %d of %s","max_steps":3}`,
					i, i, i, task)})
		}
		return a
	case turns == 1:
		return openaifake.Answer{ToolCalls: []openaifake.ToolCall{{ID: "call_wait", Name: "wait_subagents", Arguments: `{}`}}}
	default:
		return openaifake.Answer{Content: "Report on " + task + "."}
	}
}
