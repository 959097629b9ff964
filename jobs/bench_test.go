package jobs_test

// Benchmarks of the agent's own overhead, beside what bare River does on the
// same database with the same fetch settings. Run them with
//
//	export DATABASE_URL=$(infra/pg.sh url)
//	go test -run XXX -bench . -benchtime 1x ./jobs/
//
// Each prints a table; the key numbers are also reported as metrics.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// searchingModel answers at once: a cheap search on every step that offers
// tools, and a report on the last step, which offers none. Runs whose topic
// ends in "miss" search for a word no document has, which skips the
// snippets (ts_headline) and so shows the loop's cost without the tool's.
func searchingModel() *scriptModel {
	return &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		if len(req.Tools) == 0 {
			return llm.Message{Content: "report: nothing more to add"}, nil
		}
		query := `{"query":"deadline","limit":3}`
		if strings.HasSuffix(topic(req), "miss") {
			query = `{"query":"zzqqxxnothing","limit":3}`
		}
		return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", query)}}, nil
	}}
}

// agentRuns starts runs research runs of steps steps at once, each for its
// own user, and returns their timings once every step has committed.
func agentRuns(b testing.TB, a *jobs.Agent, obs *stepTimes, users []int64, runs, steps int, miss bool) chainStats {
	b.Helper()
	ctx := context.Background()
	obs.reset()
	suffix := "hit"
	if miss {
		suffix = "miss"
	}
	begin := time.Now()
	ids := make([]int64, runs)
	for i := range ids {
		run, _, err := a.StartResearch(ctx, jobs.StartParams{UserID: users[i%len(users)],
			Topic: fmt.Sprintf("benchmark run %d %s", i, suffix), MaxSteps: steps})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = run.ID
	}
	waitFor(b, 60*time.Second, "agent runs", func() bool { return obs.commits() == runs*steps })
	st := obs.stats(begin)
	for _, id := range ids {
		run, err := jobs.GetRun(ctx, a.Pool(), id)
		if err != nil {
			b.Fatal(err)
		}
		if run.Status != jobs.StatusSucceeded || run.Steps != steps {
			b.Fatalf("run %d: %s after %d steps (want %d): %s", id, run.Status, run.Steps, steps, run.Error)
		}
	}
	return st
}

// stallAfter is a pickup long enough to be a missed notification caught by
// the fetch poll (FetchPollDefault) rather than a fetch cooldown.
const stallAfter = 250 * time.Millisecond

// rowStats pools the rounds of one measurement: the median rate, and the
// latencies of every round.
type rowStats struct {
	name         string
	rates        []float64
	work, pickup []time.Duration
}

func (r *rowStats) add(c chainStats) {
	r.rates = append(r.rates, c.perSecond())
	r.work = append(r.work, c.work...)
	r.pickup = append(r.pickup, c.pickup...)
}

func (r *rowStats) rate() float64 {
	s := slices.Clone(r.rates)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func (r *rowStats) stalls() int {
	n := 0
	for _, p := range r.pickup {
		if p > stallAfter {
			n++
		}
	}
	return n
}

func rates(r *rowStats) string {
	parts := make([]string, len(r.rates))
	for i, v := range r.rates {
		parts[i] = fmt.Sprintf("%.0f", v)
	}
	return strings.Join(parts, " / ")
}

func printOverhead(title string, rows ...*rowStats) {
	fmt.Printf("\n%-50s %8s %9s %9s %10s %10s %10s %7s\n", title,
		"steps/s", "step p50", "step p99", "pickup p50", "pickup p99", "pickup max", "stalls")
	for _, r := range rows {
		fmt.Printf("%-50s %8.1f %9s %9s %10s %10s %10s %7d\n", r.name, r.rate(),
			ms(pct(r.work, .50)), ms(pct(r.work, .99)),
			ms(pct(r.pickup, .50)), ms(pct(r.pickup, .99)), ms(pct(r.pickup, 1)), r.stalls())
	}
}

// overheadRounds is how many times each measurement is repeated: the
// machine is shared, so one round alone is noisy.
const overheadRounds = 3

type overheadResult struct {
	agent8, agent8miss, river8               *rowStats
	agent1, river1, river1min, riverDefault1 *rowStats
}

func stepOverheadOnce(b *testing.B) overheadResult {
	pool := dbtest.NewPool(b)
	benchDocs(b, pool)
	users := benchUsers(b, pool, 8)
	obs := newStepTimes()
	a := benchAgent(b, pool, searchingModel(), obs)
	cd, poll := jobs.FetchCooldownDefault, jobs.FetchPollDefault

	// Warm both up (connections, prepared statements) before measuring.
	agentRuns(b, a, obs, users, 1, 5, false)
	runChains(b, pool, "gb_bench_warm", 1, 5, cd, poll)

	r := overheadResult{
		agent8:        &rowStats{name: "gb agent (zero-latency model, search hit)"},
		agent8miss:    &rowStats{name: "gb agent (zero-latency model, search miss)"},
		river8:        &rowStats{name: fmt.Sprintf("river chained jobs (cooldown %s, same as gb)", cd)},
		agent1:        &rowStats{name: "gb agent (zero-latency model, search hit)"},
		river1:        &rowStats{name: fmt.Sprintf("river chained jobs (cooldown %s, same as gb)", cd)},
		river1min:     &rowStats{name: fmt.Sprintf("river chained jobs (cooldown %s, River's min)", river.FetchCooldownMin)},
		riverDefault1: &rowStats{name: fmt.Sprintf("river chained jobs (River default cooldown %s)", river.FetchCooldownDefault)},
	}
	for round := range overheadRounds {
		q := func(name string) string { return fmt.Sprintf("gb_bench_%s_r%d", name, round) }
		r.agent8.add(agentRuns(b, a, obs, users, 8, 20, false))
		r.river8.add(runChains(b, pool, q("chain8"), 8, 20, cd, poll))
		r.agent8miss.add(agentRuns(b, a, obs, users, 8, 20, true))
		r.agent1.add(agentRuns(b, a, obs, users, 1, 40, false))
		r.river1min.add(runChains(b, pool, q("chain1_min"), 1, 40, river.FetchCooldownMin, poll))
	}
	// One round each of the slow ones. A lone River chain can stall on the
	// fetch poll now and then (see the benchmark's doc). FetchCooldown 0 leaves River's default (100 ms); the poll
	// interval stays the same so that only the cooldown differs.
	r.river1.add(runChains(b, pool, "gb_bench_chain1", 1, 40, cd, poll))
	r.riverDefault1.add(runChains(b, pool, "gb_bench_chain1_default", 1, 40, 0, poll))
	return r
}

// BenchmarkStepOverhead measures agent steps with a model that answers at
// once, beside bare River jobs that chain themselves the way steps do (insert
// the successor and complete in one transaction), on the same database.
//
// A lone bare chain can be faster than River's FetchCooldown: River sends
// at most one insert notification per queue per FetchCooldown, so a hop
// inserted within the cooldown of the last notification sends none, and
// when the fetch that the last notification triggered has already run, the
// job waits for the next poll (FetchPollInterval). Those are the "stalls";
// jobs.Config uses River's 1 ms minimum cooldown and a 100 ms poll to make
// them rare and short.
func BenchmarkStepOverhead(b *testing.B) {
	var r overheadResult
	for i := 0; i < b.N; i++ {
		r = stepOverheadOnce(b)
	}
	b.StopTimer()

	printOverhead(fmt.Sprintf("step overhead (8 runs x 20 steps, median of %d)", overheadRounds),
		r.agent8, r.agent8miss, r.river8)
	ratio8 := r.agent8.rate() / r.river8.rate()
	fmt.Printf("ratio agent/river: %.2f (target >= 0.30); with a search miss: %.2f\n",
		ratio8, r.agent8miss.rate()/r.river8.rate())
	fmt.Printf("rounds (steps/s): agent %s; agent, miss %s; river %s\n",
		rates(r.agent8), rates(r.agent8miss), rates(r.river8))

	printOverhead(fmt.Sprintf("light load (1 run x 40 steps, median of %d)", overheadRounds),
		r.agent1, r.river1, r.river1min, r.riverDefault1)
	fmt.Printf("ratio agent/river: %.2f (river without stalls, 1ms row: %.2f); agent pickup p50 %s (target <= 5ms)\n",
		r.agent1.rate()/r.river1.rate(), r.agent1.rate()/r.river1min.rate(), ms(pct(r.agent1.pickup, .5)))
	fmt.Printf("(river: a step is one job from its start to its commit; pickup is a commit to the next start of the same\n"+
		" run or chain; stalls are pickups over %s; the same-as-gb and the default river rows are one round each)\n", stallAfter)

	b.ReportMetric(r.agent8.rate(), "agent-steps/s")
	b.ReportMetric(r.river8.rate(), "river-jobs/s")
	b.ReportMetric(ratio8, "ratio")
	b.ReportMetric(msf(pct(r.agent8.work, .5)), "agent-step-p50-ms")
	b.ReportMetric(msf(pct(r.agent1.pickup, .5)), "agent-pickup1-p50-ms")
	b.ReportMetric(msf(pct(r.agent1.pickup, .99)), "agent-pickup1-p99-ms")
	b.ReportMetric(msf(pct(r.river1.pickup, .5)), "river-pickup1-p50-ms")
	b.ReportMetric(msf(pct(r.riverDefault1.pickup, .5)), "river-default-pickup1-p50-ms")
}

// parkGates hold each root's sub-agents in their model call until the root
// has parked (committed its wait_subagents step), as a real model's latency
// would; otherwise a sub-agent could end before its parent waits for it.
type parkGates struct {
	mu    sync.Mutex
	gates []chan struct{} // by root number
	index map[int64]int   // root run id -> root number
	early map[int64]bool  // roots that parked before their id was known here
}

func newParkGates(n int) *parkGates {
	g := &parkGates{index: map[int64]int{}, early: map[int64]bool{}}
	for range n {
		g.gates = append(g.gates, make(chan struct{}))
	}
	return g
}

// committed is the observer's hook: step 2 of a root is its wait.
func (g *parkGates) committed(id int64, step int) {
	if step != 2 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if i, ok := g.index[id]; ok {
		close(g.gates[i])
	} else {
		g.early[id] = true
	}
}

// started records root i's run id.
func (g *parkGates) started(i int, id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.index[id] = i
	if g.early[id] {
		close(g.gates[i])
	}
}

func (g *parkGates) wait(ctx context.Context, i int) error {
	select {
	case <-g.gates[i]:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type spawnResult struct {
	spawn, resume, riverInsert []time.Duration
}

func spawnOnce(b *testing.B, roots, kids int) spawnResult {
	ctx := context.Background()
	pool := dbtest.NewPool(b)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{
		{Source: "bench", Title: "bench", Body: "a document so that the dataset exists"}}); err != nil {
		b.Fatal(err)
	}
	users := benchUsers(b, pool, roots)
	g := newParkGates(roots)
	obs := newStepTimes()
	obs.onCommit = g.committed
	model := &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		var r, c int
		if _, err := fmt.Sscanf(topic(req), "child task r%d c%d", &r, &c); err == nil {
			if err := g.wait(ctx, r); err != nil {
				return llm.Message{}, err
			}
			return llm.Message{Content: fmt.Sprintf("child report r%d c%d", r, c)}, nil
		}
		if _, err := fmt.Sscanf(topic(req), "root %d", &r); err != nil {
			return llm.Message{}, fmt.Errorf("unexpected topic %q", topic(req))
		}
		switch turns(req) {
		case 0:
			var calls []llm.ToolCall
			for c := range kids {
				calls = append(calls, toolCall("spawn_subagent",
					fmt.Sprintf(`{"name":"c%d","reason":"part %d","task":"child task r%d c%d","max_steps":3}`, c, c, r, c)))
			}
			return llm.Message{ToolCalls: calls}, nil
		case 1:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
		}
		return llm.Message{Content: "root report:\n" + lastToolResult(req)}, nil
	}}
	a := benchAgent(b, pool, model, obs)
	time.Sleep(200 * time.Millisecond) // let the client settle

	ids := make([]int64, roots)
	for i := range ids {
		run, _, err := a.StartResearch(ctx, jobs.StartParams{UserID: users[i], Topic: fmt.Sprintf("root %d", i)})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = run.ID
		g.started(i, run.ID)
		time.Sleep(50 * time.Millisecond) // light load: one tree at a time, mostly
	}
	waitFor(b, 60*time.Second, "research trees", func() bool { return obs.commits() == roots*(3+kids) })

	var res spawnResult
	for _, id := range ids {
		tree, err := jobs.Tree(ctx, pool, id)
		if err != nil {
			b.Fatal(err)
		}
		root := tree[0]
		if root.Status != jobs.StatusSucceeded || root.Steps != 3 || len(tree) != 1+kids {
			b.Fatalf("root %d: %s after %d steps with %d sub-agents: %s", id, root.Status, root.Steps, len(tree)-1, root.Error)
		}
		spawned, _ := obs.committedAt(id, 1)
		parked, _ := obs.committedAt(id, 2)
		resumed, ok := obs.startedAt(id, 3)
		if !ok {
			b.Fatalf("root %d: no resumed step recorded", id)
		}
		var lastEnd time.Time
		for _, kid := range tree[1:] {
			start, ok1 := obs.startedAt(kid.ID, 1)
			end, ok2 := obs.committedAt(kid.ID, 1)
			if !ok1 || !ok2 || kid.Status != jobs.StatusSucceeded {
				b.Fatalf("sub-agent %d: %s, times recorded %v %v", kid.ID, kid.Status, ok1, ok2)
			}
			res.spawn = append(res.spawn, start.Sub(spawned))
			if end.After(lastEnd) {
				lastEnd = end
			}
		}
		if !lastEnd.After(parked) {
			b.Fatalf("root %d: its sub-agents ended before it parked", id)
		}
		res.resume = append(res.resume, resumed.Sub(lastEnd))
	}
	var resumedEvents int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_events
		WHERE run_id = ANY($1) AND kind = 'resumed'`, ids).Scan(&resumedEvents); err != nil {
		b.Fatal(err)
	}
	if resumedEvents != roots {
		b.Fatalf("%d resumes for %d roots: not every root parked", resumedEvents, roots)
	}

	res.riverInsert = insertToStart(b, pool, "gb_bench_ping", 200, 10*time.Millisecond)
	return res
}

// BenchmarkSpawnAndResume measures how fast sub-agents start after the step
// that spawned them commits, and how fast a parked parent resumes after its
// last sub-agent ends, beside River's own insert-to-start latency.
func BenchmarkSpawnAndResume(b *testing.B) {
	const roots, kids = 20, 3
	var r spawnResult
	for i := 0; i < b.N; i++ {
		r = spawnOnce(b, roots, kids)
	}
	b.StopTimer()

	fmt.Printf("\n%-58s %5s %10s %10s %10s\n", fmt.Sprintf("spawn and resume (%d roots x %d sub-agents, roots 50ms apart)", roots, kids),
		"n", "p50", "p99", "max")
	for _, row := range []struct {
		name string
		ds   []time.Duration
	}{
		{"gb spawn commit -> sub-agent's first step start", r.spawn},
		{"gb last sub-agent's end commit -> parent resumed start", r.resume},
		{fmt.Sprintf("river Insert commit -> job start (cooldown %s)", jobs.FetchCooldownDefault), r.riverInsert},
	} {
		fmt.Printf("%-58s %5d %10s %10s %10s\n", row.name, len(row.ds), ms(pct(row.ds, .5)), ms(pct(row.ds, .99)), ms(pct(row.ds, 1)))
	}
	fmt.Println("(river jobs: 200 no-op jobs inserted one at a time, 10ms apart, on the same database)")

	b.ReportMetric(msf(pct(r.spawn, .5)), "spawn-start-p50-ms")
	b.ReportMetric(msf(pct(r.spawn, .99)), "spawn-start-p99-ms")
	b.ReportMetric(msf(pct(r.resume, .5)), "resume-p50-ms")
	b.ReportMetric(msf(pct(r.resume, .99)), "resume-p99-ms")
	b.ReportMetric(msf(pct(r.riverInsert, .5)), "river-insert-start-p50-ms")
	b.ReportMetric(msf(pct(r.riverInsert, .99)), "river-insert-start-p99-ms")
}
