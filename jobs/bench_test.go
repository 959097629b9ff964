package jobs_test

// Benchmarks of the agent's own overhead, beside what bare River does on the
// same database with the same fetch settings. Run them with
//
//	export DATABASE_URL=$(infra/pg.sh url)
//	go test -run XXX -bench . -benchtime 1x ./jobs/
//
// Each prints a table; the key numbers are also reported as metrics. The
// measuring parts are package bench's; gb bench prints one table of the
// same comparisons on any database.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/bench"
	"github.com/gbresearch/gb/jobs/kb"
)

// searchingModel answers at once: a cheap search on every step that offers
// tools, and a report on the last step, which offers none. Runs whose topic
// ends in "miss" search for a word no document has, which skips the
// snippets (ts_headline) and so shows the loop's cost without the tool's.
func searchingModel() *bench.ToolModel {
	return &bench.ToolModel{Query: func(topic string) string {
		if strings.HasSuffix(topic, "miss") {
			return bench.MissQuery
		}
		return "deadline"
	}}
}

// agentRuns starts runs research runs of steps steps at once, each for its
// own user, and returns their timings once every step has committed.
func agentRuns(b testing.TB, a *jobs.Service, obs *bench.StepTimes, users []int64, runs, steps int, miss bool) bench.ChainStats {
	b.Helper()
	suffix := "hit"
	if miss {
		suffix = "miss"
	}
	st, err := bench.AgentRuns(context.Background(), a, obs, bench.RunsParams{Users: users, Runs: runs, Steps: steps,
		Topic: func(i int) string { return fmt.Sprintf("benchmark run %d %s", i, suffix) }})
	if err != nil {
		b.Fatal(err)
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

// add pools a round; a pickup is a commit to the next step's start,
// whether that step went through the queue or ran in the same job.
func (r *rowStats) add(c bench.ChainStats) {
	r.rates = append(r.rates, c.PerSecond())
	r.work = append(r.work, c.Work...)
	r.pickup = append(append(r.pickup, c.Pickup...), c.Next...)
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
	obs := bench.NewStepTimes(nil)
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

type spawnResult struct {
	spawn, resume, riverInsert []time.Duration
}

func spawnOnce(b *testing.B, roots int) spawnResult {
	ctx := context.Background()
	pool := dbtest.NewPool(b)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{
		{Source: "bench", Title: "bench", Body: "a document so that the dataset exists"}}); err != nil {
		b.Fatal(err)
	}
	users := benchUsers(b, pool, roots)
	g := bench.NewParkGates(roots)
	obs := bench.NewStepTimes(g.Committed)
	a := benchAgent(b, pool, &bench.TreeModel{Gates: g}, obs)
	// Light load: one tree at a time, mostly.
	trees, errs := bench.StartTrees(ctx, a, bench.TreesParams{Users: users, Trees: roots, Gap: 50 * time.Millisecond, Gates: g})
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	if err := obs.WaitCommits(ctx, roots*bench.TreeSteps, 30*time.Second); err != nil {
		b.Fatal(err)
	}
	var res spawnResult
	var err error
	if res.spawn, res.resume, err = bench.SpawnResume(ctx, pool, obs, trees); err != nil {
		b.Fatal(err)
	}
	ids := make([]int64, len(trees))
	for i, t := range trees {
		ids[i] = t.Root
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
	const roots, kids = 20, bench.TreeKids
	var r spawnResult
	for i := 0; i < b.N; i++ {
		r = spawnOnce(b, roots)
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
