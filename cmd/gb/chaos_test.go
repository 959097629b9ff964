package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// Shape of TestChaosKillsLoseNothing.
const (
	chaosUsers      = 4   // users, each with at most jobs.MaxWorkingPerUser trees at once
	chaosBaseTrees  = 15  // trees started in any case (the last ones wait for a user's slot)
	chaosMaxTrees   = 200 // more are started only while the kill quotas are not met
	chaosMinRandom  = 21  // SIGKILLs by the killer at random instants
	chaosRunFor     = 150 * time.Second
	chaosRecoverP99 = 15 * time.Second // bound on the p99 of the time to recover from a kill
	// Odds of GB_FAULT_KILL at each step point: while some point has not
	// been hit, the least hit one gets chaosLoudFault (a worker runs 5 to
	// 10 steps a second, so it kills itself within a few seconds), the
	// others chaosQuietFault (a kill every half minute or so).
	chaosLoudFault  = 0.03
	chaosQuietFault = 0.001
)

// chaosPoints are the fault points of GB_FAULT_KILL.
var chaosPoints = []string{jobs.FaultAfterModel, jobs.FaultAfterTools, jobs.FaultBeforeCommit, jobs.FaultAfterCommit}

// TestChaosKillsLoseNothing runs two `gb worker` processes, with the
// default step timeout, under a stream of researches (the demo topic: a
// root, three sub-agents that message each other, some trees with a token
// budget) from several users, while a killer SIGKILLs a random worker at
// random instants and one of the workers also kills itself at the step
// points of GB_FAULT_KILL. Every killed worker is restarted after a short
// pause. It measures how long each kill takes to recover from (the next
// commit, or end, of every run whose job the dead worker held) and checks
// in SQL, over every run of every tree, that nothing was stuck or lost:
// every run ended and says why, its steps were recorded exactly once, each
// parent resumed once per wait, no job was left behind, every message was
// stored once per send and read at most once, and no budget was overspent.
func TestChaosKillsLoseNothing(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("runs worker processes that are killed some 40 times, for a couple of minutes")
	}
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewURL(t)
	pool, err := db.Open(ctx, db.PoolConfig{URL: url, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	bin := buildGB(t)

	src := filepath.Join(runtime.GOROOT(), "src")
	docs, err := kb.FromPaths([]string{filepath.Join(src, "context"), filepath.Join(src, "sync"), filepath.Join(src, "net/http")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, docs); err != nil {
		t.Fatal(err)
	}
	var users []int64
	for i := range chaosUsers {
		name := fmt.Sprintf("chaos-%d", i)
		if _, err := jobs.CreateKey(ctx, pool, name); err != nil {
			t.Fatal(err)
		}
		uid, err := jobs.UserID(ctx, pool, name)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, uid)
	}
	inserter, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}

	c := &chaos{t: t, ctx: ctx, pool: pool, bin: bin, url: url, begin: time.Now(),
		hits: map[string]int{}, seenLocks: map[int64]bool{}, snap: map[int64]chaosSnap{},
		attempts: map[int64]map[int]time.Time{}}
	defer func() {
		for _, p := range c.procsSnapshot() {
			_ = p.cmd.Process.Kill() // those still running, should the test end early
		}
	}()
	defer func() {
		if t.Failed() {
			c.dump()
		}
	}()

	// The workers: slot 0 dies only by the killer's hand, slot 1 also by
	// its own at the fault points.
	var wg sync.WaitGroup
	for slot := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); c.supervise(slot) }()
	}
	wg.Add(3)
	go func() { defer wg.Done(); c.watchRunning() }()
	go func() { defer wg.Done(); c.kill() }()
	go func() { defer wg.Done(); c.feed(inserter, users) }()

	// Wait for every tree to end; the killer and the feeder stop by
	// themselves once their quotas are met.
	deadline := c.begin.Add(chaosRunFor + 60*time.Second)
	for {
		time.Sleep(250 * time.Millisecond)
		if c.feedDone() && c.allEnded() {
			break
		}
		if time.Now().After(deadline) {
			c.stopAll()
			wg.Wait()
			t.Fatalf("the trees did not all end within %s", deadline.Sub(c.begin).Round(time.Second))
		}
	}
	ended := time.Now()
	// A job left unfinished for an ended run (a stale step of a run that a
	// kill interrupted) is settled by the next maintenance pass at the
	// latest; give it the time of a rescue.
	var leftAtEnd int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE finalized_at IS NULL`).Scan(&leftAtEnd)
	waitUntil(10*time.Second, func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE finalized_at IS NULL`).Scan(&n)
		return n == 0
	})
	c.stopAll()
	wg.Wait()
	t.Logf("all %d trees ended %s after the start; %d step jobs were still unfinished then",
		len(c.rootIDs()), ended.Sub(c.begin).Round(time.Millisecond), leftAtEnd)

	c.report()
	c.checkInvariants()
}

// chaos is the state of one chaos run.
type chaos struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	bin   string
	url   string
	begin time.Time

	startMu sync.Mutex // one worker starts at a time, to tell its liveness lock

	mu        sync.Mutex
	stopping  bool
	procs     [2]*chaosProc
	allProcs  []*chaosProc
	deaths    []*chaosDeath
	hits      map[string]int // injected kills by point
	random    int            // kills by the killer
	seenLocks map[int64]bool // liveness locks ever seen
	snap      map[int64]chaosSnap
	attempts  map[int64]map[int]time.Time // when each attempt of a job was first seen to start (its attempted_at)
	roots     []chaosRoot
	refused   int // starts refused for the per-user limit
	fed       bool
}

type chaosRoot struct {
	id        int64
	user      int64
	maxTokens int64
	kind      int // -1 with no budget, else the index in chaosBudgets and chaosBudgetShares
}

// chaosProc is one `gb worker` process.
type chaosProc struct {
	slot    int
	cmd     *exec.Cmd
	started time.Time
	fault   string
	lockKey int64 // the liveness lock's key (the hash of its River client id); 0 when unseen
	log     *lineLog
	done    chan struct{} // closed when the process has exited
	err     error         // its exit, once done

	killedAt time.Time // set by the killer just before its SIGKILL
}

// chaosDeath is one death of a worker and the jobs it held.
type chaosDeath struct {
	slot int
	kind string // "random", a fault point, or "unexpected"
	at   time.Time
	jobs []chaosJob
	// recovery is the time from the death until its jobs all ran again
	// or were finished, moved until their runs all committed the step or
	// ended; set by report.
	recovery, moved time.Duration
}

type chaosJob struct {
	id, run       int64
	step, attempt int
}

// chaosSnap is the running jobs of one worker as last seen.
type chaosSnap struct {
	at   time.Time
	jobs []chaosJob
}

func (c *chaos) isStopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopping
}

func (c *chaos) rootIDs() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]int64, len(c.roots))
	for i, r := range c.roots {
		ids[i] = r.id
	}
	return ids
}

// quotasMet says whether the killer has killed enough and every fault
// point has been hit.
func (c *chaos) quotasMet() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.random < chaosMinRandom {
		return false
	}
	for _, p := range chaosPoints {
		if c.hits[p] == 0 {
			return false
		}
	}
	return true
}

// faultSpec is GB_FAULT_KILL for a new process of slot 1: loud at the
// point hit least so far while some point has not been hit, quiet at the
// others and, once all have been hit, at all.
func (c *chaos) faultSpec() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	least := chaosPoints[0]
	for _, p := range chaosPoints {
		if c.hits[p] < c.hits[least] {
			least = p
		}
	}
	var parts []string
	for _, p := range chaosPoints {
		odds := chaosQuietFault
		if p == least && c.hits[p] == 0 {
			odds = chaosLoudFault
		}
		parts = append(parts, fmt.Sprintf("%s:%g", p, odds))
	}
	return strings.Join(parts, ",")
}

// livenessLocks lists the keys of the liveness locks held in the test's
// database (jobs/liveness.go: pg_advisory_lock(7411100, hashtext(id))).
func (c *chaos) livenessLocks() (map[int64]bool, error) {
	rows, err := c.pool.Query(c.ctx, `SELECT objid::bigint FROM pg_locks
		WHERE locktype = 'advisory' AND classid = 7411100 AND objsubid = 2 AND granted
		  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		return nil, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	m := map[int64]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m, nil
}

// start starts a worker process for slot and waits until it holds its
// liveness lock, to learn the lock's key.
func (c *chaos) start(slot int) *chaosProc {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	p := &chaosProc{slot: slot, log: &lineLog{}}
	if slot == 1 {
		p.fault = c.faultSpec()
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "DATABASE_URL", "GB_STEP_TIMEOUT", "GB_FAULT_KILL", "GB_OFFLINE_DELAY", "GB_LOG_LEVEL",
			"OPENAI_API_KEY", "OPENAI_SECRET_ARN", "DATABASE_SECRET_ARN":
			continue // the default step timeout, on purpose
		}
		env = append(env, kv)
	}
	env = append(env, "DATABASE_URL="+c.url, "OPENAI_API_KEY=", "GB_LOG_LEVEL=info",
		fmt.Sprintf("GB_OFFLINE_DELAY=%dms", 100+rand.IntN(101)))
	if p.fault != "" {
		env = append(env, "GB_FAULT_KILL="+p.fault)
	}
	before, _ := c.livenessLocks()
	p.cmd = exec.Command(c.bin, "worker")
	p.cmd.Env = env
	p.cmd.Stdout = p.log
	p.cmd.Stderr = p.log
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		c.t.Errorf("starting a worker: %v", err)
		return nil
	}
	p.done = make(chan struct{})
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	c.mu.Lock()
	c.allProcs = append(c.allProcs, p)
	c.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		now, err := c.livenessLocks()
		if err == nil {
			c.mu.Lock()
			for k := range now {
				if !before[k] && !c.seenLocks[k] {
					c.seenLocks[k] = true
					p.lockKey = k
				}
			}
			c.mu.Unlock()
			if p.lockKey != 0 {
				return p
			}
		}
		select {
		case <-p.done:
			return p // died before we saw its lock
		case <-time.After(20 * time.Millisecond):
		}
	}
	c.t.Errorf("worker %d (pid %d) took no liveness lock within 20s", slot, p.cmd.Process.Pid)
	return p
}

// supervise keeps a worker running in slot: it starts one, waits for its
// death, records it and the jobs it held, and restarts it after a short
// random pause, until the test stops.
func (c *chaos) supervise(slot int) {
	for !c.isStopping() {
		p := c.start(slot)
		if p == nil {
			return
		}
		c.mu.Lock()
		c.procs[slot] = p
		c.mu.Unlock()
		<-p.done
		err := p.err
		died := time.Now()
		held := c.heldBy(p.lockKey)
		c.mu.Lock()
		c.procs[slot] = nil
		stopping := c.stopping
		killedAt := p.killedAt
		d := &chaosDeath{slot: slot, at: died}
		switch {
		case p.log.has("fault injection: killing the worker at "):
			line := p.log.find("fault injection: killing the worker at ")
			d.kind = strings.TrimSpace(strings.TrimPrefix(line.text, "fault injection: killing the worker at "))
			d.at = line.at
			c.hits[d.kind]++
		case !killedAt.IsZero():
			d.kind, d.at = "random", killedAt
			c.random++
		case stopping:
			d = nil
		default:
			d.kind = "unexpected"
		}
		if d != nil {
			// The jobs it held: those running under its River client just
			// after its death, and those of the last snapshot before it.
			seen := map[int64]bool{}
			for _, j := range append(held, c.snap[p.lockKey].jobs...) {
				if !seen[j.id] {
					seen[j.id] = true
					d.jobs = append(d.jobs, j)
				}
			}
			c.deaths = append(c.deaths, d)
		}
		c.mu.Unlock()
		if d != nil && d.kind == "unexpected" {
			c.t.Errorf("worker %d (started %s) exited by itself: %v; its last lines:\n%s", slot,
				p.started.Sub(c.begin).Round(time.Millisecond), err, p.log.tail(20))
		}
		if stopping {
			return
		}
		time.Sleep(time.Duration(200+rand.IntN(1300)) * time.Millisecond)
	}
}

// heldBy lists the step jobs running under the River client whose
// liveness lock has the key.
func (c *chaos) heldBy(key int64) []chaosJob {
	if key == 0 {
		return nil
	}
	rows, err := c.pool.Query(c.ctx, `SELECT id, (args->>'run_id')::bigint, (args->>'step')::int, attempt FROM river_job
		WHERE state = 'running' AND kind = $1
		  AND (hashtext(attempted_by[cardinality(attempted_by)])::bigint & 4294967295) = $2`, jobs.StepKind, key)
	if err != nil {
		c.t.Logf("listing the jobs of a dead worker: %v", err)
		return nil
	}
	js, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (chaosJob, error) {
		var j chaosJob
		err := r.Scan(&j.id, &j.run, &j.step, &j.attempt)
		return j, err
	})
	if err != nil {
		c.t.Logf("listing the jobs of a dead worker: %v", err)
	}
	return js
}

// watchRunning snapshots the running step jobs of each worker every 100ms,
// so that a death knows the jobs its worker held even if a rescue came
// before supervise looked.
func (c *chaos) watchRunning() {
	for !c.isStopping() {
		rows, err := c.pool.Query(c.ctx, `SELECT id, (args->>'run_id')::bigint, (args->>'step')::int, attempt,
				hashtext(attempted_by[cardinality(attempted_by)])::bigint & 4294967295, attempted_at
			FROM river_job WHERE state = 'running' AND kind = $1`, jobs.StepKind)
		if err == nil {
			now := time.Now()
			by := map[int64][]chaosJob{}
			started := map[chaosJob]time.Time{}
			for rows.Next() {
				var j chaosJob
				var key int64
				var at time.Time
				if rows.Scan(&j.id, &j.run, &j.step, &j.attempt, &key, &at) == nil {
					by[key] = append(by[key], j)
					started[j] = at
				}
			}
			rows.Close()
			c.mu.Lock()
			for j, at := range started {
				if c.attempts[j.id] == nil {
					c.attempts[j.id] = map[int]time.Time{}
				}
				if _, ok := c.attempts[j.id][j.attempt]; !ok {
					// The first start: a snoozed job (a budget wait) runs
					// again under the same attempt.
					c.attempts[j.id][j.attempt] = at
				}
			}
			for _, p := range c.procs {
				if p != nil && p.lockKey != 0 {
					c.snap[p.lockKey] = chaosSnap{at: now, jobs: by[p.lockKey]}
				}
			}
			c.mu.Unlock()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill SIGKILLs a random live worker after a random pause (4 to 8 s),
// until it has killed chaosMinRandom times and the fault points have all
// been hit, or every tree has ended. The pause is longer than a rescue
// takes (some 6 s: jobs.LivenessConfirm and the maintenance interval), so
// that most kills can be measured one at a time; some still come while
// the last one is being recovered from.
func (c *chaos) kill() {
	for !c.isStopping() && !c.quotasMet() && !(c.feedDone() && c.allEnded()) {
		time.Sleep(time.Duration(4000+rand.IntN(4000)) * time.Millisecond)
		c.mu.Lock()
		var live []*chaosProc
		for _, p := range c.procs {
			if p != nil && p.lockKey != 0 && p.killedAt.IsZero() && c.random < chaosMinRandom {
				live = append(live, p)
			}
		}
		if len(live) == 0 || c.stopping {
			c.mu.Unlock()
			continue
		}
		p := live[rand.IntN(len(live))]
		p.killedAt = time.Now()
		c.mu.Unlock()
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// feed starts the trees, round robin over the users: chaosBaseTrees in
// any case, and more (up to chaosMaxTrees) while the kill quotas are not
// met and the run is young, so that the kills land on work. A start the
// per-user limit refuses is tried again later. Every other tree has a
// token budget.
func (c *chaos) feed(inserter *jobs.Agent, users []int64) {
	defer func() {
		c.mu.Lock()
		c.fed = true
		c.mu.Unlock()
	}()
	for n := 0; n < chaosMaxTrees && !c.isStopping(); {
		if n >= chaosBaseTrees && (c.quotasMet() || time.Since(c.begin) > chaosRunFor) {
			return
		}
		uid := users[n%len(users)]
		p := jobs.StartParams{UserID: uid, Topic: demoTopic}
		kind := -1
		if n%2 == 1 {
			kind = (n / 2) % len(chaosBudgets)
			p.MaxTokens = c.budget(kind)
		}
		run, _, err := inserter.StartResearch(c.ctx, p)
		switch {
		case errors.Is(err, jobs.ErrTooManyWorking):
			c.mu.Lock()
			c.refused++
			c.mu.Unlock()
			time.Sleep(250 * time.Millisecond)
			continue
		case err != nil:
			c.t.Errorf("starting tree %d: %v", n, err)
			return
		}
		c.mu.Lock()
		c.roots = append(c.roots, chaosRoot{id: run.ID, user: uid, maxTokens: p.MaxTokens, kind: kind})
		c.mu.Unlock()
		n++
	}
}

// chaosBudgets are the token budgets of the trees that have one.
// chaosBudgets are the token budgets of the first trees that have one;
// with the offline model a tree of the demo topic spends some 75,000 to
// 150,000 tokens (it depends on the policy's report).
var chaosBudgets = []int64{30000, 60000, 100000, 200000}

// chaosBudgetShares are the budgets of the later trees, as shares of what
// the most expensive tree with no budget spent: the smallest stops the
// root early (it writes its report and its sub-agents are cancelled), the
// middle ones stop some sub-agents (every call but the root's report must
// leave a quarter of the budget), the largest never bites.
var chaosBudgetShares = []float64{0.35, 0.6, 0.9, 1.5}

// budget is the token budget of a tree of the kind.
func (c *chaos) budget(kind int) int64 {
	var spent int64
	_ = c.pool.QueryRow(c.ctx, `SELECT coalesce(max((SELECT sum(tokens) FROM gb_agent_research_runs x WHERE x.root_id = r.id)), 0)::bigint
		FROM gb_agent_research_runs r WHERE r.id = ANY($1) AND r.max_tokens IS NULL AND r.status = 'succeeded'`, c.rootIDs()).Scan(&spent)
	if spent == 0 {
		return chaosBudgets[kind]
	}
	return int64(float64(spent) * chaosBudgetShares[kind])
}

func (c *chaos) feedDone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fed
}

func (c *chaos) allEnded() bool {
	ids := c.rootIDs()
	var working int
	err := c.pool.QueryRow(c.ctx, `SELECT count(*) FROM gb_agent_research_runs
		WHERE root_id = ANY($1) AND status NOT IN ('succeeded', 'failed')`, ids).Scan(&working)
	return err == nil && working == 0
}

// stopAll stops the killer, the feeder and the supervisors, and stops the
// workers (SIGTERM, then SIGKILL after 15s).
func (c *chaos) stopAll() {
	c.mu.Lock()
	c.stopping = true
	procs := c.procs
	c.mu.Unlock()
	for _, p := range procs {
		if p != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	go func() {
		time.Sleep(15 * time.Second)
		for _, p := range procs {
			if p != nil {
				_ = p.cmd.Process.Kill()
			}
		}
	}()
}

// report computes the recovery of each death and logs the figures of the
// run: kills by kind, repairs, recovery p50/p99, statuses and errors.
func (c *chaos) report() {
	t, ctx := c.t, c.ctx
	c.mu.Lock()
	deaths := slices.Clone(c.deaths)
	hits := map[string]int{}
	for k, v := range c.hits {
		hits[k] = v
	}
	random, refused, procs := c.random, c.refused, len(c.allProcs)
	c.mu.Unlock()

	// Two measures of recovery, for each job the dead worker held:
	// back: until it ran again (its next attempt started, on a live
	// worker) or was finished for good (cancelled, discarded), which is
	// what the rescue of a dead worker's jobs is for; and moved: until its
	// run committed the job's step or ended, which adds the step's own
	// time and any later kill of the worker that took it over. A kill's
	// recovery is that of the last of its jobs.
	var backKill, movedKill, backJob, movedJob []time.Duration
	var emptyKills, finishedBefore int
	for _, d := range deaths {
		if len(d.jobs) == 0 {
			emptyKills++
			continue
		}
		var back, moved time.Duration
		var n int
		for _, j := range d.jobs {
			var attempt int
			var finalized, stepAt, endedAt *time.Time
			var rescues []time.Time
			if err := c.pool.QueryRow(ctx, `SELECT j.attempt, j.finalized_at,
					(SELECT created_at FROM gb_agent_research_steps WHERE run_id = $2 AND step = $3),
					(SELECT ended_at FROM gb_agent_research_runs WHERE id = $2),
					coalesce((SELECT array_agg((e->>'at')::timestamptz ORDER BY (e->>'attempt')::int) FROM unnest(j.errors) e
					          WHERE (e->>'attempt')::int >= $4), '{}')
				FROM river_job j WHERE j.id = $1`, j.id, j.run, j.step, j.attempt).
				Scan(&attempt, &finalized, &stepAt, &endedAt, &rescues); err != nil {
				t.Fatal(err)
			}
			if attempt == j.attempt && finalized != nil && !finalized.After(d.at) {
				finishedBefore++ // the snapshot was older than its end: it was not the dead worker's
				continue
			}
			// back: the start of the next attempt as seen running, else the
			// row's own start when that attempt is the last, else when the
			// job was finalized on the attempt it was killed in.
			var backAt *time.Time
			c.mu.Lock()
			if at, ok := c.attempts[j.id][j.attempt+1]; ok {
				backAt = &at
			}
			c.mu.Unlock()
			if backAt == nil && attempt == j.attempt && finalized != nil {
				backAt = finalized
			}
			if backAt == nil && attempt > j.attempt && len(rescues) > 0 {
				backAt = &rescues[0] // the next attempt ran too briefly to be seen: its rescue bounds it
			}
			if backAt == nil {
				t.Errorf("kill %s at %s: job %d (run %d step %d) killed on attempt %d never ran again (now attempt %d)",
					d.kind, d.at.Sub(c.begin).Round(time.Millisecond), j.id, j.run, j.step, j.attempt, attempt)
				continue
			}
			var movedAt *time.Time
			switch {
			case stepAt != nil && stepAt.After(d.at):
				movedAt = stepAt
			case endedAt != nil && endedAt.After(d.at):
				movedAt = endedAt
			default:
				movedAt = backAt // its step had committed or its run ended: nothing more to wait for
			}
			n++
			backJob = append(backJob, backAt.Sub(d.at))
			movedJob = append(movedJob, movedAt.Sub(d.at))
			back, moved = max(back, backAt.Sub(d.at)), max(moved, movedAt.Sub(d.at))
		}
		if n > 0 {
			d.recovery, d.moved = back, moved
			backKill = append(backKill, back)
			movedKill = append(movedKill, moved)
		} else {
			emptyKills++
		}
	}
	kinds := map[string]int{}
	for _, d := range deaths {
		kinds[d.kind]++
	}
	t.Logf("worker processes started: %d; kills: %d random, injected %s (%d in all); unexpected exits: %d",
		procs, random, formatCounts(hits), len(deaths), kinds["unexpected"])
	t.Logf("kills that held no running job: %d; jobs seen on a dead worker that had finished before its death: %d",
		emptyKills, finishedBefore)
	t.Logf("recovery per kill, until all its jobs ran again or were finished: n=%d p50=%s p90=%s p99=%s max=%s",
		len(backKill), pct(backKill, 50), pct(backKill, 90), pct(backKill, 99), pct(backKill, 100))
	t.Logf("recovery per kill, until each of its runs committed the step or ended: n=%d p50=%s p90=%s p99=%s max=%s",
		len(movedKill), pct(movedKill, 50), pct(movedKill, 90), pct(movedKill, 99), pct(movedKill, 100))
	t.Logf("per job (n=%d): ran again p50=%s p99=%s; moved on p50=%s p99=%s",
		len(backJob), pct(backJob, 50), pct(backJob, 99), pct(movedJob, 50), pct(movedJob, 99))
	sort.Slice(deaths, func(i, j int) bool { return deaths[i].at.Before(deaths[j].at) })
	var line []string
	for _, d := range deaths {
		line = append(line, fmt.Sprintf("%s@%s(w%d,%dj,%s/%s)", d.kind, d.at.Sub(c.begin).Round(100*time.Millisecond),
			d.slot, len(d.jobs), d.recovery.Round(100*time.Millisecond), d.moved.Round(100*time.Millisecond)))
	}
	t.Logf("kills in order (kind@time(worker,jobs held,ran again/moved on)): %s", strings.Join(line, " "))
	worst := slices.Clone(deaths)
	sort.Slice(worst, func(i, j int) bool { return worst[i].moved > worst[j].moved })
	for _, d := range worst[:min(2, len(worst))] {
		if d.recovery > 10*time.Second || d.moved > 15*time.Second {
			c.explain(d)
		}
	}

	// What the maintenance did.
	ids := c.rootIDs()
	repairs := map[string]int{}
	rows, err := c.pool.Query(ctx, `SELECT coalesce(data->>'action', ''), count(*) FROM gb_agent_research_events
		WHERE root_id = ANY($1) AND kind = 'repaired' GROUP BY 1`, ids)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a string
		var n int
		_ = rows.Scan(&a, &n)
		repairs[a] = n
	}
	rows.Close()
	logs := map[string]int{}
	for _, p := range c.procsSnapshot() {
		for _, l := range p.log.lines() {
			for _, m := range []string{"rescuing the jobs of dead workers", "maintenance repaired the queue",
				"repairing a run with no step job", "resuming a parked run that lost its resume",
				"ending a run whose step job was lost", "maintenance pass failed", "level=ERROR"} {
				if strings.Contains(l.text, m) {
					logs[m]++
				}
			}
		}
	}
	t.Logf("repaired events by action: %s; maintenance logs: %s", formatCounts(repairs), formatCounts(logs))
	var retried, maxAttempt, discarded, cancelled, rescuedErrs int
	if err := c.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE attempt > 1), coalesce(max(attempt), 0),
			count(*) FILTER (WHERE state = 'discarded'), count(*) FILTER (WHERE state = 'cancelled'),
			coalesce(sum((SELECT count(*) FROM unnest(errors) e WHERE e->>'error' LIKE 'rescued:%')), 0)
		FROM river_job WHERE kind = $1`, jobs.StepKind).Scan(&retried, &maxAttempt, &discarded, &cancelled, &rescuedErrs); err != nil {
		t.Fatal(err)
	}
	t.Logf("step jobs: %d run more than once (most attempts %d), %d rescues recorded, %d discarded, %d cancelled; "+
		"starts refused for the per-user limit: %d", retried, maxAttempt, rescuedErrs, discarded, cancelled, refused)

	for _, p := range chaosPoints {
		if hits[p] == 0 {
			t.Errorf("no worker was killed at %s", p)
		}
	}
	if random < 20 {
		t.Errorf("the killer killed %d times, want at least 20", random)
	}
	if len(backKill) == 0 {
		t.Error("no kill interrupted a running job")
	} else if p99 := pct(backKill, 99); p99 > chaosRecoverP99 {
		t.Errorf("p99 time to recover from a kill (its jobs running again) is %s, want at most %s", p99, chaosRecoverP99)
	}
}

// explain logs what became of the jobs a slow-to-recover death held:
// when each was rescued, its attempts, when its run moved on.
func (c *chaos) explain(d *chaosDeath) {
	var b strings.Builder
	for _, j := range d.jobs {
		var state string
		var attempt int
		var errs, stepAt, endedAt string
		err := c.pool.QueryRow(c.ctx, `SELECT j.state::text, j.attempt,
				coalesce((SELECT string_agg(format('%s@%s', e->>'attempt',
					round(extract(epoch FROM (e->>'at')::timestamptz - $3::timestamptz)::numeric, 1)) || ':' || left(e->>'error', 40), '; ')
					FROM unnest(j.errors) e), ''),
				coalesce((SELECT round(extract(epoch FROM created_at - $3::timestamptz)::numeric, 1)::text
					FROM gb_agent_research_steps WHERE run_id = $2 AND step = $4), '-'),
				coalesce((SELECT round(extract(epoch FROM ended_at - $3::timestamptz)::numeric, 1)::text
					FROM gb_agent_research_runs WHERE id = $2), '-')
			FROM river_job j WHERE j.id = $1`, j.id, j.run, d.at, j.step).Scan(&state, &attempt, &errs, &stepAt, &endedAt)
		if err != nil {
			fmt.Fprintf(&b, "  job %d: %v\n", j.id, err)
			continue
		}
		fmt.Fprintf(&b, "  job %d run %d step %d attempt %d at the kill, now %s attempt %d; step committed at %ss, run ended at %ss; errors (attempt@s:error): %s\n",
			j.id, j.run, j.step, j.attempt, state, attempt, stepAt, endedAt, errs)
	}
	var kills []string
	for _, o := range c.deaths {
		if off := o.at.Sub(d.at); off > -2*time.Second && off < max(d.recovery, d.moved)+time.Second {
			kills = append(kills, fmt.Sprintf("%s w%d at %+.1fs", o.kind, o.slot, off.Seconds()))
		}
	}
	var starts []string
	for _, p := range c.procsSnapshot() {
		if off := p.started.Sub(d.at); off > -2*time.Second && off < max(d.recovery, d.moved)+time.Second {
			starts = append(starts, fmt.Sprintf("w%d at %+.1fs", p.slot, off.Seconds()))
		}
	}
	c.t.Logf("kill %s of worker %d at %s: its jobs ran again within %s, their runs moved on within %s; kills around it: %s; worker starts: %s; its jobs (times from the kill):\n%s",
		d.kind, d.slot, d.at.Sub(c.begin).Round(time.Millisecond), d.recovery.Round(time.Millisecond), d.moved.Round(time.Millisecond),
		strings.Join(kills, ", "), strings.Join(starts, ", "), b.String())
}

func (c *chaos) procsSnapshot() []*chaosProc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.allProcs)
}

// checkInvariants checks in SQL, over every run of every tree, that
// nothing is stuck or lost.
func (c *chaos) checkInvariants() {
	t, ctx, pool := c.t, c.ctx, c.pool
	ids := c.rootIDs()
	if len(ids) < 10 {
		t.Errorf("only %d trees were started, want at least 10", len(ids))
	}
	var runs []*jobs.Run
	for _, id := range ids {
		tree, err := jobs.Tree(ctx, pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(tree) < 4 {
			t.Errorf("tree %d has %d runs, want a root and its three sub-agents", id, len(tree))
		}
		runs = append(runs, tree...)
	}

	// Trees whose budget bit: a run ran out, or the root stopped early.
	bit := map[int64]bool{}
	rows, err := pool.Query(ctx, `SELECT DISTINCT root_id FROM gb_agent_research_events
		WHERE root_id = ANY($1) AND kind = 'budget_exhausted'
		UNION SELECT root_id FROM gb_agent_research_runs WHERE root_id = ANY($1) AND error LIKE 'budget exhausted%'`, ids)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		bit[id] = true
	}
	rows.Close()

	// Every run ended, and says why.
	statuses := map[string]int{}
	errs := map[string]int{}
	var otherFailures []string
	for _, r := range runs {
		who := "sub-agent"
		if r.IsRoot() {
			who = "root"
		}
		statuses[who+" "+r.Status]++
		switch {
		case r.Status == jobs.StatusSucceeded && r.Report == "":
			t.Errorf("run %d (%s) succeeded with no report", r.ID, r.Name)
		case r.Status == jobs.StatusFailed && r.Error == "":
			t.Errorf("run %d (%s) failed with no error", r.ID, r.Name)
		case !r.Ended():
			t.Errorf("run %d (%s) did not end: %s/%s", r.ID, r.Name, r.Status, r.State)
		}
		if r.Status != jobs.StatusFailed {
			continue
		}
		class := errorClass(r.Error)
		if class == "cancelled by parent" && bit[r.RootID] {
			class += " (budget)" // its root ran out and wrote its report early
		}
		errs[class]++
		if !strings.HasPrefix(class, "budget exhausted") && class != "cancelled by parent (budget)" {
			otherFailures = append(otherFailures, fmt.Sprintf("run %d (%s, tree %d): %s", r.ID, r.Name, r.RootID, r.Error))
		}
	}
	t.Logf("%d runs in %d trees: %s; errors: %s", len(runs), len(ids), formatCounts(statuses), formatCounts(errs))
	for _, f := range otherFailures {
		t.Logf("failed for another reason than its budget: %s", f)
	}
	// A kill costs a run its job only when all jobs.StepMaxAttempts
	// attempts of one step were killed: it should be rare.
	if len(otherFailures) > len(runs)/20 {
		t.Errorf("%d of %d runs failed for another reason than their budget", len(otherFailures), len(runs))
	}

	// No user ever had more than jobs.MaxWorkingPerUser trees working. A
	// start counts the user's working roots under the user's row lock,
	// then inserts its root and its 'queued' event: the roots of the user
	// with a smaller id had committed before that count, and one whose end
	// was stamped after the event was still working at the count.
	rows, err = pool.Query(ctx, `SELECT a.user_id, a.id, count(*) FROM gb_agent_research_runs a
		JOIN gb_agent_research_events q ON q.run_id = a.id AND q.kind = 'queued'
		JOIN gb_agent_research_runs b ON b.user_id = a.user_id AND b.parent_id IS NULL AND b.id <= a.id
		 AND (b.id = a.id OR coalesce(b.ended_at, 'infinity') > q.at)
		WHERE a.parent_id IS NULL AND a.id = ANY($1) GROUP BY 1, 2 HAVING count(*) > $2`, ids, jobs.MaxWorkingPerUser)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var user, id int64
		var n int
		_ = rows.Scan(&user, &id, &n)
		t.Errorf("user %d had %d trees working when tree %d started", user, n, id)
	}
	rows.Close()

	// Steps recorded exactly once: steps = conversation rows = last step.
	rows, err = pool.Query(ctx, `SELECT r.id, r.steps, count(s.step), coalesce(max(s.step), 0)
		FROM gb_agent_research_runs r LEFT JOIN gb_agent_research_steps s ON s.run_id = r.id
		WHERE r.root_id = ANY($1) GROUP BY r.id HAVING r.steps <> count(s.step) OR r.steps <> coalesce(max(s.step), 0)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var steps, n, last int
		_ = rows.Scan(&id, &steps, &n, &last)
		t.Errorf("run %d: steps %d, conversation rows %d, last step %d", id, steps, n, last)
	}
	rows.Close()

	// Each parent resumed exactly once per wait (a parent whose sub-agents
	// had all ended when it called wait_subagents does not park).
	rows, err = pool.Query(ctx, `SELECT r.id, r.parent_id IS NULL,
			(SELECT count(*) FROM gb_agent_research_events e WHERE e.run_id = r.id AND e.kind = 'waiting'),
			(SELECT count(*) FROM gb_agent_research_events e WHERE e.run_id = r.id AND e.kind = 'resumed')
		FROM gb_agent_research_runs r WHERE r.root_id = ANY($1) ORDER BY r.id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var root bool
		var waits, resumed int
		_ = rows.Scan(&id, &root, &waits, &resumed)
		if waits != resumed {
			t.Errorf("run %d parked %d times but resumed %d times", id, waits, resumed)
		}
		if root && resumed > 1 {
			t.Errorf("root %d resumed %d times, want at most 1; its events: %s", id, resumed, c.events(id))
		}
	}
	rows.Close()

	// No job left behind.
	rows, err = pool.Query(ctx, `SELECT j.id, j.state::text, (j.args->>'run_id')::bigint, r.status
		FROM river_job j LEFT JOIN gb_agent_research_runs r ON r.id = (j.args->>'run_id')::bigint
		WHERE j.finalized_at IS NULL ORDER BY j.id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, run int64
		var state string
		var status *string
		_ = rows.Scan(&id, &state, &run, &status)
		t.Errorf("job %d of run %d (%v) left %s", id, run, deref(status), state)
	}
	rows.Close()

	c.checkMessages(ids)
	c.checkBudgets(ids)
}

// events lists a run's events and the tools of its steps, to tell what
// happened to it.
func (c *chaos) events(id int64) string {
	var out string
	_ = c.pool.QueryRow(c.ctx, `SELECT coalesce(string_agg(format('%s %s', kind, data::text), '; ' ORDER BY seq), '')
		FROM gb_agent_research_events WHERE run_id = $1`, id).Scan(&out)
	return out
}

// checkMessages checks that every send_message that succeeded stored one
// message and every stored message came from one (the sender's events and
// tool results agree with gb_messages), and that every message read was
// read once: it is in exactly one read_messages result of its receiver
// when read_at is set, and in none when not.
func (c *chaos) checkMessages(ids []int64) {
	t, ctx, pool := c.t, c.ctx, c.pool
	var stored, events, sentResults int
	if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM gb_messages m JOIN gb_agent_research_runs r ON r.id = m.from_id WHERE r.root_id = ANY($1)),
			(SELECT count(*) FROM gb_agent_research_events WHERE root_id = ANY($1) AND kind = 'message'),
			(SELECT count(*) FROM gb_agent_research_steps s JOIN gb_agent_research_runs r ON r.id = s.run_id,
			     jsonb_array_elements(s.messages) e
			 WHERE r.root_id = ANY($1) AND e->>'role' = 'tool' AND e->>'name' = 'send_message'
			   AND e->>'content' LIKE 'sent to %')`, ids).Scan(&stored, &events, &sentResults); err != nil {
		t.Fatal(err)
	}
	// Per sender and receiver, so that a loss and a duplicate elsewhere do
	// not cancel out.
	rows, err := pool.Query(ctx, `WITH sent AS (
			SELECT e.run_id AS from_id, (e.data->>'to_run')::bigint AS to_id, count(*) AS n
			FROM gb_agent_research_events e WHERE e.root_id = ANY($1) AND e.kind = 'message' GROUP BY 1, 2),
		stored AS (
			SELECT m.from_id, m.to_id, count(*) AS n FROM gb_messages m
			JOIN gb_agent_research_runs r ON r.id = m.from_id WHERE r.root_id = ANY($1) GROUP BY 1, 2)
		SELECT coalesce(s.from_id, m.from_id), coalesce(s.to_id, m.to_id), coalesce(s.n, 0), coalesce(m.n, 0)
		FROM sent s FULL JOIN stored m ON m.from_id = s.from_id AND m.to_id = s.to_id
		WHERE coalesce(s.n, 0) <> coalesce(m.n, 0)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var from, to, sent, kept int64
		_ = rows.Scan(&from, &to, &sent, &kept)
		t.Errorf("run %d sent %d messages to run %d (events), but %d are stored", from, sent, to, kept)
	}
	rows.Close()
	if stored != events || stored != sentResults {
		t.Errorf("messages: %d stored, %d 'message' events, %d send_message results", stored, events, sentResults)
	}

	type msg struct {
		id, from, to int64
		name, text   string
		read         bool
	}
	rows, err = pool.Query(ctx, `SELECT m.id, m.from_id, m.to_id, m.from_name, m.text, m.read_at IS NOT NULL
		FROM gb_messages m JOIN gb_agent_research_runs r ON r.id = m.to_id WHERE r.root_id = ANY($1) ORDER BY m.id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (msg, error) {
		var m msg
		err := r.Scan(&m.id, &m.from, &m.to, &m.name, &m.text, &m.read)
		return m, err
	})
	if err != nil {
		t.Fatal(err)
	}
	// What each receiver read, from its conversation.
	rows, err = pool.Query(ctx, `SELECT s.run_id, e->>'content' FROM gb_agent_research_steps s
		JOIN gb_agent_research_runs r ON r.id = s.run_id, jsonb_array_elements(s.messages) e
		WHERE r.root_id = ANY($1) AND e->>'role' = 'tool' AND e->>'name' = 'read_messages'`, ids)
	if err != nil {
		t.Fatal(err)
	}
	read := map[int64][]string{}
	var reads int
	for rows.Next() {
		var run int64
		var content string
		_ = rows.Scan(&run, &content)
		read[run] = append(read[run], content)
		reads++
	}
	rows.Close()
	type key struct {
		from, to int64
		text     string
	}
	want, got := map[key]int{}, map[key]int{}
	var unread int
	for _, m := range msgs {
		k := key{m.from, m.to, m.text}
		if m.read {
			want[k]++
		} else {
			unread++
		}
		if _, ok := got[k]; ok {
			continue
		}
		line := fmt.Sprintf("From %s (run %d): %s", m.name, m.from, m.text)
		for _, r := range read[m.to] {
			got[k] += strings.Count(r, line)
		}
	}
	for k, n := range got {
		if n != want[k] {
			t.Errorf("message from run %d to run %d (%.60q): read %d times in its receiver's conversation, read_at set on %d",
				k.from, k.to, k.text, n, want[k])
		}
	}
	t.Logf("messages: %d sent and stored, %d read (by %d read_messages results), %d never read (their receiver had read or ended)",
		stored, len(msgs)-unread, reads, unread)
	if stored == 0 {
		t.Error("no sub-agent messaged a sibling")
	}
}

// checkBudgets checks that no tree with a budget spent past it: what its
// runs count is at most its max_tokens plus what settled calls used beyond
// their reservation (a reservation bounds a call only by the model's
// estimate). It also checks that each paid call is counted once: the runs'
// tokens are the sum of the tree's settled calls.
func (c *chaos) checkBudgets(ids []int64) {
	t, ctx, pool := c.t, c.ctx, c.pool
	rows, err := pool.Query(ctx, `SELECT r.id, r.max_tokens, r.status,
			(SELECT sum(tokens) FROM gb_agent_research_runs x WHERE x.root_id = r.id)::bigint,
			(SELECT coalesce(sum(greatest(0, prompt_tokens + completion_tokens - reserved_tokens)), 0)
			 FROM gb_model_calls WHERE root_id = r.id AND status = 'settled')::bigint,
			(SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM gb_model_calls
			 WHERE root_id = r.id AND status = 'settled')::bigint,
			(SELECT count(*) FROM gb_agent_research_events e WHERE e.root_id = r.id AND e.kind = 'budget_exhausted')
		FROM gb_agent_research_runs r WHERE r.id = ANY($1) ORDER BY r.id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	type spend struct {
		trees, bitten, stopped, outOfBudget, rootsFailed int
		min, max, minBudget, maxBudget                   int64
	}
	kinds := map[int64]int{}
	c.mu.Lock()
	for _, r := range c.roots {
		kinds[r.id] = r.kind
	}
	c.mu.Unlock()
	by := map[int]*spend{} // by kind of budget, -1 for none
	for rows.Next() {
		var id, spent, over, ledger int64
		var maxTokens *int64
		var status string
		var exhausted int
		if err := rows.Scan(&id, &maxTokens, &status, &spent, &over, &ledger, &exhausted); err != nil {
			t.Fatal(err)
		}
		if spent != ledger {
			t.Errorf("tree %d: its runs count %d tokens, its settled model calls %d", id, spent, ledger)
		}
		var budget int64
		if maxTokens != nil {
			budget = *maxTokens
			if spent > budget+over {
				t.Errorf("tree %d spent %d tokens, past its budget of %d (+%d used beyond reservations)", id, spent, budget, over)
			}
		}
		var outOfBudget int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_runs WHERE root_id = $1 AND error LIKE 'budget exhausted%'`,
			id).Scan(&outOfBudget); err != nil {
			t.Fatal(err)
		}
		b := by[kinds[id]]
		if b == nil {
			b = &spend{min: spent, max: spent, minBudget: budget, maxBudget: budget}
			by[kinds[id]] = b
		}
		b.trees++
		b.min, b.max = min(b.min, spent), max(b.max, spent)
		b.minBudget, b.maxBudget = min(b.minBudget, budget), max(b.maxBudget, budget)
		b.outOfBudget += outOfBudget
		if exhausted > 0 {
			b.stopped++
		}
		if exhausted+outOfBudget > 0 {
			b.bitten++
		}
		if status == jobs.StatusFailed {
			b.rootsFailed++
		}
	}
	rows.Close()
	for _, kind := range slices.Sorted(maps.Keys(by)) {
		b := by[kind]
		what := "no budget"
		if kind >= 0 {
			what = fmt.Sprintf("a budget of %d to %d tokens (%d, then %.2f of the most a tree with none spent)",
				b.minBudget, b.maxBudget, chaosBudgets[kind], chaosBudgetShares[kind])
		}
		t.Logf("trees with %s: %d, spent %d to %d tokens; the budget bit in %d (the root wrote its report from the share kept for it in %d; %d runs ended out of budget); %d roots failed",
			what, b.trees, b.min, b.max, b.bitten, b.stopped, b.outOfBudget, b.rootsFailed)
	}
}

// dump logs, on failure, the runs of every tree, then dumpTree of the
// first tree with a run that did not succeed (which also logs every job),
// and the last lines of the last worker processes.
func (c *chaos) dump() {
	t, ctx := c.t, c.ctx
	first := int64(0)
	for _, id := range c.rootIDs() {
		tree, _ := jobs.Tree(ctx, c.pool, id)
		for _, r := range tree {
			if r.Status != jobs.StatusSucceeded && first == 0 {
				first = id
			}
			if id != first {
				t.Logf("run %d %s (tree %d): %s/%s steps %d tokens %d error %q", r.ID, r.Name, id, r.Status, r.State, r.Steps, r.Tokens, r.Error)
			}
		}
	}
	if first == 0 && len(c.rootIDs()) > 0 {
		first = c.rootIDs()[0]
	}
	if first != 0 {
		dumpTree(t, c.pool, first)
	}
	procs := c.procsSnapshot()
	for _, p := range procs[max(0, len(procs)-4):] {
		t.Logf("worker %d started at %s (GB_FAULT_KILL=%q), last lines:\n%s", p.slot,
			p.started.Sub(c.begin).Round(time.Millisecond), p.fault, p.log.tail(15))
	}
}

// errorClass groups the errors of failed runs.
func errorClass(e string) string {
	switch {
	case strings.HasPrefix(e, "budget exhausted"):
		return "budget exhausted"
	case strings.HasPrefix(e, jobs.CancelledByParent):
		return "cancelled by parent"
	case strings.Contains(e, "job was lost"):
		return "job lost"
	case strings.HasPrefix(e, "model error"):
		return "model error"
	}
	if len(e) > 40 {
		e = e[:40]
	}
	return e
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100 // nearest rank
	return s[max(0, min(len(s)-1, i-1))].Round(time.Millisecond)
}

func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func deref(s *string) string {
	if s == nil {
		return "deleted"
	}
	return *s
}

func waitUntil(within time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// lineLog keeps a process's output line by line with the time each line
// arrived.
type lineLog struct {
	mu      sync.Mutex
	partial []byte
	log     []logLine
}

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.log = append(l.log, logLine{at: now, text: string(l.partial[:i])})
		l.partial = l.partial[i+1:]
	}
	return len(b), nil
}

func (l *lineLog) lines() []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}

func (l *lineLog) find(s string) logLine {
	for _, x := range l.lines() {
		if strings.Contains(x.text, s) {
			return x
		}
	}
	return logLine{}
}

func (l *lineLog) has(s string) bool { return l.find(s).text != "" }

func (l *lineLog) tail(n int) string {
	ls := l.lines()
	var b strings.Builder
	for _, x := range ls[max(0, len(ls)-n):] {
		b.WriteString("  " + x.text + "\n")
	}
	return b.String()
}
