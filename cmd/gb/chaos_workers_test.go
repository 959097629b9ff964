package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/jackc/pgx/v5"
)

// The workers of the chaos test: started, watched, killed and restarted.

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
		late := c.stopping // stopAll came while it started
		c.mu.Unlock()
		if late {
			terminate(p)
		}
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

// kill SIGKILLs a random live worker after a random pause (4.5 to 8.5 s),
// until it has killed chaosMinRandom times and the fault points have all
// been hit, or every tree has ended. The pause is longer than a rescue
// takes (some 6 s: jobs.LivenessConfirm and the maintenance interval), so
// that most kills can be measured one at a time; some still come while
// the last one is being recovered from.
func (c *chaos) kill() {
	for !c.isStopping() && !c.quotasMet() && !(c.feedDone() && c.allEnded()) {
		time.Sleep(time.Duration(4500+rand.IntN(4000)) * time.Millisecond)
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

// stopAll stops the killer, the feeder and the supervisors, and stops the
// workers (SIGTERM, then SIGKILL after 15s).
func (c *chaos) stopAll() {
	c.mu.Lock()
	c.stopping = true
	procs := c.procs
	c.mu.Unlock()
	for _, p := range procs {
		if p != nil {
			terminate(p)
		}
	}
}

// terminate stops a worker with SIGTERM, and SIGKILL if it has not exited
// within 15s.
func terminate(p *chaosProc) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	go func() {
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	}()
}

func (c *chaos) procsSnapshot() []*chaosProc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.allProcs)
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
