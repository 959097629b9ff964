package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/jobs"
)

// TestPostgresRestartsAndOutage runs `gb dev` (API and worker in one
// process) on a Postgres cluster of its own, starts three researches whose
// roots spawn sub-agents, and while they work restarts Postgres twice
// (pg_ctl restart -m fast) and then stops it for 20 seconds. Meanwhile a
// client polls the API every ~100ms: every answer must be 2xx, 4xx or 503
// (never a 500, never a hang past the client's timeout). Afterwards every
// tree has succeeded with each step recorded exactly once, and the worker
// logged the outage a handful of times rather than ten times a second.
func TestPostgresRestartsAndOutage(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("runs its own Postgres, a gb dev process and a 20s outage")
	}
	t.Parallel()
	ctx := context.Background()
	pg := startOwnPostgres(t)
	pool, err := db.Open(ctx, db.PoolConfig{URL: pg.url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := db.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	loadTopicDocs(t, pool)
	key, err := jobs.CreateKey(ctx, pool, "restart")
	if err != nil {
		t.Fatal(err)
	}

	dev := startDev(t, buildGB(t), pg.url)
	api := &probeClient{base: "http://" + dev.addr, key: key, http: &http.Client{Timeout: 15 * time.Second}}
	waitFor(t, 30*time.Second, "the API to answer", func() bool {
		code, _, err := api.do(http.MethodGet, "/v1/gb/research?limit=1", "")
		return err == nil && code == http.StatusOK
	})

	var roots []int64
	for range 3 {
		code, body, err := api.do(http.MethodPost, "/v1/gb/research", fmt.Sprintf(`{"topic":%q}`, demoTopic))
		if err != nil || code != http.StatusAccepted {
			t.Fatalf("starting a research: %d %s %v", code, body, err)
		}
		var run struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(body, &run); err != nil || run.ID == 0 {
			t.Fatalf("start answered %s: %v", body, err)
		}
		roots = append(roots, run.ID)
	}
	defer func() {
		if t.Failed() {
			for _, id := range roots {
				dumpTree(t, pool, id)
			}
			dev.dumpTail(t, 80)
		}
	}()

	poll := startPoller(api, roots)
	defer poll.stop()

	// Disrupt only once every tree is in the middle of its work.
	waitFor(t, 60*time.Second, "sub-agents of every tree to be working", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(DISTINCT parent_id) FROM gb_agent_research_runs
			WHERE parent_id = ANY($1) AND steps >= 1`, roots).Scan(&n)
		return err == nil && n == len(roots)
	})

	type disruption struct {
		what       string
		start, end time.Time     // from the command that took Postgres down to the one that brought it back returning
		firstStep  time.Duration // from end to the first step committed after it
		firstOK    time.Duration // from end to the first 2xx of the API after it
		last503    time.Duration // from end to the last 503 answered (to a request made) after it
		working    int           // trees still working when it began
	}
	var disruptions []*disruption
	// lastCommit is when the latest step committed (its transaction began).
	lastCommit := func() time.Time {
		var last time.Time
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_ = pool.QueryRow(qctx, `SELECT coalesce(max(created_at), 'epoch') FROM gb_agent_research_steps`).Scan(&last)
		return last
	}
	working := func() (n int) {
		for _, id := range roots {
			if r, err := jobs.GetRun(ctx, pool, id); err != nil || !r.Ended() {
				n++
			}
		}
		return n
	}
	afterEach := func(d *disruption) {
		waitFor(t, 60*time.Second, "a step committed after "+d.what, func() bool {
			if last := lastCommit(); last.After(d.end) {
				d.firstStep = last.Sub(d.end)
				return true
			}
			return working() == 0 // nothing left to commit
		})
	}
	// Each disruption comes as soon as work has resumed after the one
	// before, so that all of them hit trees at work.
	for i := range 2 {
		d := &disruption{what: fmt.Sprintf("restart %d", i+1), working: working(), start: time.Now()}
		pg.run(t, "restart")
		d.end = time.Now()
		disruptions = append(disruptions, d)
		afterEach(d)
	}
	outage := &disruption{what: "the 20s outage", working: working(), start: time.Now()}
	pg.run(t, "stop")
	time.Sleep(20 * time.Second)
	pg.run(t, "start")
	outage.end = time.Now()
	disruptions = append(disruptions, outage)
	afterEach(outage)

	waitFor(t, 90*time.Second, "every tree to end", func() bool {
		for _, id := range append(roots, poll.created()...) {
			r, err := jobs.GetRun(ctx, pool, id)
			if err != nil || !r.Ended() {
				return false
			}
		}
		return true
	})
	poll.stop()
	for _, id := range append(roots, poll.created()...) {
		checkTreeExactlyOnce(t, pool, id)
		if r, err := jobs.GetRun(ctx, pool, id); err == nil && r.EndedAt != nil {
			t.Logf("tree %d: %s in %s", id, r.Status, r.EndedAt.Sub(r.CreatedAt).Round(time.Millisecond))
		}
	}
	if n := len(poll.created()); n > 0 {
		t.Errorf("the poller's POST, meant to be refused, started %d trees", n)
	}
	var retried, maxAttempt int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE attempt > 1), coalesce(max(attempt), 0) FROM river_job`).
		Scan(&retried, &maxAttempt); err != nil {
		t.Fatal(err)
	}
	t.Logf("step jobs run more than once: %d (most attempts of one job: %d)", retried, maxAttempt)

	// What the client saw.
	results := poll.results()
	codes := map[int]int{}
	var failures []string
	for _, r := range results {
		codes[r.code]++
		switch {
		case r.err != nil:
			failures = append(failures, fmt.Sprintf("%s %s at %s: %v", r.method, r.path, r.at.Format("15:04:05.000"), r.err))
		case r.code >= 200 && r.code < 300, r.code >= 400 && r.code < 500, r.code == http.StatusServiceUnavailable:
		default:
			failures = append(failures, fmt.Sprintf("%s %s at %s: %d %s", r.method, r.path, r.at.Format("15:04:05.000"), r.code, r.body))
		}
	}
	keys := slices.Sorted(func(yield func(int) bool) {
		for c := range codes {
			if !yield(c) {
				return
			}
		}
	})
	var summary []string
	for _, c := range keys {
		name := strconv.Itoa(c)
		if c == 0 {
			name = "no answer"
		}
		summary = append(summary, fmt.Sprintf("%s: %d", name, codes[c]))
	}
	t.Logf("%d API requests: %s", len(results), strings.Join(summary, ", "))
	for _, d := range disruptions {
		d.firstOK = -1
		for _, r := range results {
			if r.at.After(d.end) && r.err == nil && r.code >= 200 && r.code < 300 {
				d.firstOK = r.at.Sub(d.end)
				break
			}
		}
		var unavailable int
		next := time.Now()
		if i := slices.Index(disruptions, d); i+1 < len(disruptions) {
			next = disruptions[i+1].start
		}
		for _, r := range results {
			if r.at.Before(d.start) || !r.at.Before(next) || r.code != http.StatusServiceUnavailable {
				continue
			}
			unavailable++
			if r.at.After(d.end) {
				d.last503 = r.at.Sub(d.end)
			}
		}
		// Steps that failed although Postgres was back: on a connection
		// that the restart had broken, say.
		lateFailures := 0
		for _, l := range dev.lines() {
			if l.at.After(d.end) && l.at.Before(next) && strings.Contains(l.text, "Job errored") {
				lateFailures++
			}
		}
		t.Logf("%s (%d trees working): Postgres down for %s; after it was back, first step committed in %s, first 2xx in %s, "+
			"last 503 at %s, %d steps failed; %d answers of 503 in all",
			d.what, d.working, d.end.Sub(d.start).Round(time.Millisecond), d.firstStep.Round(time.Millisecond),
			d.firstOK.Round(time.Millisecond), d.last503.Round(time.Millisecond), lateFailures, unavailable)
	}
	if len(failures) > 0 {
		t.Errorf("%d API requests failed (500, other 5xx, hang or transport error), first ones:\n%s",
			len(failures), strings.Join(failures[:min(len(failures), 10)], "\n"))
	}

	// What the worker logged: the throttle says when the database is back.
	waitFor(t, 15*time.Second, "gb dev to log that the database is reachable again", func() bool {
		for _, l := range dev.lines() {
			if l.at.After(outage.end) && strings.Contains(l.text, "database reachable again") {
				return true
			}
		}
		return false
	})
	errorsIn := func(from, to time.Time) (n int) {
		for _, l := range dev.lines() {
			if !l.at.Before(from) && !l.at.After(to) && strings.Contains(l.text, "level=ERROR") {
				n++
			}
		}
		return n
	}
	all := dev.lines()
	var allErrors, warns, summaries, suppressed int
	for _, l := range all {
		if _, after, ok := strings.Cut(l.text, "suppressed="); ok && strings.Contains(l.text, "database reachable again") {
			n, _ := strconv.Atoi(strings.Fields(after)[0])
			suppressed += n
		}
		switch {
		case strings.Contains(l.text, "level=ERROR"):
			allErrors++
		case strings.Contains(l.text, "level=WARN"):
			warns++
		}
		if strings.Contains(l.text, "database unreachable;") {
			summaries++
		}
	}
	during := errorsIn(outage.start, outage.end)
	t.Logf("gb dev logged %d lines: %d ERROR (%d during the %s outage), %d WARN, %d outage summaries; the throttle suppressed %d records",
		len(all), allErrors, during, outage.end.Sub(outage.start).Round(time.Second), warns, summaries, suppressed)
	for _, l := range all[max(0, len(all)-100):] {
		t.Logf("  %s", l.text)
	}
	// Before the throttle, a 20s outage gave some 230 ERROR lines (River's
	// producer alone logs ten a second).
	if during > 10 {
		t.Errorf("%d ERROR lines during the outage, want at most 10", during)
	}
}

// ownPostgres is a Postgres cluster of the test's own, run by infra/pg.sh
// on a free port in a directory of its own, wiped when the test ends.
type ownPostgres struct {
	script string
	env    []string
	url    string
}

func startOwnPostgres(t *testing.T) *ownPostgres {
	t.Helper()
	script, err := filepath.Abs("../../infra/pg.sh")
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir(): when we are root the server runs as the postgres
	// user, who cannot reach into a test's private directory.
	dir, err := os.MkdirTemp("", "gb-pgrestart-")
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "GB_PG_") {
			env = append(env, kv)
		}
	}
	pg := &ownPostgres{script: script, env: append(env, "GB_PG_PORT="+strconv.Itoa(serverPort(t)), "GB_PG_DIR="+dir)}
	t.Cleanup(func() {
		if out, err := pg.cmd("wipe").CombinedOutput(); err != nil {
			t.Errorf("wiping the test's Postgres: %v\n%s", err, out)
		}
		_ = os.RemoveAll(dir)
	})
	out, err := pg.cmd("start").Output()
	if err != nil {
		msg := fmt.Sprintf("cannot start a Postgres of the test's own with infra/pg.sh: %v\n%s", err, stderrOf(err))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	pg.url = strings.TrimSpace(string(out))
	return pg
}

func (pg *ownPostgres) cmd(arg string) *exec.Cmd {
	cmd := exec.Command("bash", pg.script, arg)
	cmd.Env = pg.env
	return cmd
}

// run runs pg.sh start, stop or restart.
func (pg *ownPostgres) run(t *testing.T, arg string) {
	t.Helper()
	if out, err := pg.cmd(arg).CombinedOutput(); err != nil {
		t.Fatalf("infra/pg.sh %s: %v\n%s", arg, err, out)
	}
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// serverPort returns a free port for a server that must bind it again
// after a restart or an outage: one outside the range the kernel gives
// outgoing connections (net.ipv4.ip_local_port_range), which none of the
// many connections a test run opens can take while the server is down. A
// port from freePort is inside that range.
func serverPort(t *testing.T) int {
	t.Helper()
	lo, hi := ephemeralRange(t)
	for _, r := range [][2]int{{hi + 1, 65535}, {10000, lo - 1}} {
		n := r[1] - r[0] + 1
		if n <= 0 {
			continue
		}
		start := rand.IntN(n) // apart from other processes that look the same way
		for i := range n {
			port := r[0] + (start+i)%n
			if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				_ = ln.Close()
				return port
			}
		}
	}
	t.Fatalf("no free port outside the ephemeral range %d-%d", lo, hi)
	return 0
}

// ephemeralRange reads the range of local ports the kernel picks for
// outgoing connections.
func ephemeralRange(t *testing.T) (lo, hi int) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatalf("reading the ephemeral port range: %v", err)
	}
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		t.Fatalf("parsing the ephemeral port range %q: %v", b, err)
	}
	return lo, hi
}

// freePort returns a port free now, chosen by the kernel.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// devProcess is `gb dev` running as a child process, its stderr kept line
// by line with the time each line arrived.
type devProcess struct {
	addr string

	mu  sync.Mutex
	log []logLine
}

type logLine struct {
	at   time.Time
	text string
}

func startDev(t *testing.T, bin, url string) *devProcess {
	t.Helper()
	d := &devProcess{addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	cmd := exec.Command(bin, "dev", "--addr", d.addr)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "GB_OFFLINE_DELAY=200ms", "GB_STEP_TIMEOUT=5s",
		"OPENAI_API_KEY=", "GB_LOG_LEVEL=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			d.mu.Lock()
			d.log = append(d.log, logLine{at: time.Now(), text: sc.Text()})
			d.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { <-done; _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return d
}

func (d *devProcess) lines() []logLine {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.log)
}

func (d *devProcess) dumpTail(t *testing.T, n int) {
	lines := d.lines()
	for _, l := range lines[max(0, len(lines)-n):] {
		t.Logf("gb dev: %s", l.text)
	}
}

type probeClient struct {
	base, key string
	http      *http.Client
}

// do makes one request; err is set when no answer came (a timeout included).
func (c *probeClient) do(method, path, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// poller asks the API about the researches every ~100ms and records every
// answer: a GET of each root in turn, the list, and a POST that starts a
// research on a dataset that does not exist, which the API refuses with 400
// once it has looked in the database (in the transaction that locks the
// user), so that the poller never adds trees.
type poller struct {
	api   *probeClient
	roots []int64

	mu    sync.Mutex
	res   []pollResult
	extra []int64 // researches the POST did start, should one ever be

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

type pollResult struct {
	at           time.Time
	method, path string
	code         int
	body         string
	err          error
}

func startPoller(api *probeClient, roots []int64) *poller {
	ctx, cancel := context.WithCancel(context.Background())
	p := &poller{api: api, roots: roots, cancel: cancel, done: make(chan struct{})}
	go p.loop(ctx)
	return p
}

func (p *poller) loop(ctx context.Context) {
	defer close(p.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var method, path, body string
		switch i % 3 {
		case 0:
			method, path = http.MethodGet, fmt.Sprintf("/v1/gb/research/%d", p.roots[(i/3)%len(p.roots)])
		case 1:
			method, path = http.MethodGet, "/v1/gb/research?limit=20"
		case 2:
			method, path, body = http.MethodPost, "/v1/gb/research", `{"topic":"What does sync.Once guarantee?","dataset":"no-such-dataset"}`
		}
		start := time.Now()
		code, b, err := p.api.do(method, path, body)
		r := pollResult{at: start, method: method, path: path, code: code, err: err}
		if code >= 500 {
			r.body = strings.TrimSpace(string(b))
		}
		p.mu.Lock()
		p.res = append(p.res, r)
		if method == http.MethodPost && code == http.StatusAccepted {
			var run struct {
				ID int64 `json:"id"`
			}
			if json.Unmarshal(b, &run) == nil && run.ID != 0 {
				p.extra = append(p.extra, run.ID)
			}
		}
		p.mu.Unlock()
	}
}

func (p *poller) stop() {
	p.once.Do(func() { p.cancel(); <-p.done })
}

func (p *poller) results() []pollResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.res)
}

func (p *poller) created() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.extra)
}
