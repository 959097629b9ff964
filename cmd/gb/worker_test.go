package main

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
)

// TestWorkerWaitsForPostgres starts `gb worker` with its database behind a
// TCP proxy that refuses every connection: the worker does not exit but
// warns once per wait, with the error and the attempt; once the proxy lets
// connections through, it comes up and works a research to its report,
// and SIGTERM then stops it cleanly.
func TestWorkerWaitsForPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool, seed := lambdatest.SeededDB(t)
	inserter, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := inserter.StartResearch(ctx, jobs.StartParams{UserID: seed.UserID, Topic: "What does sync.Once guarantee?"})
	if err != nil {
		t.Fatal(err)
	}
	proxy, proxied := proxiedURL(t, url)
	proxy.Down()

	w := startWaitingWorker(t, buildGB(t), proxied)
	waitFor(t, 60*time.Second, "two waits for the database", func() bool { return len(w.waits()) >= 2 || w.exited() })
	if w.exited() {
		t.Fatalf("gb worker exited while the database was down:\n%s", w.stderr())
	}
	proxy.Up()
	waitFor(t, 60*time.Second, "the research to end", func() bool {
		r, err := jobs.GetRun(ctx, pool, run.ID)
		return (err == nil && r.Ended()) || w.exited()
	})
	if r, err := jobs.GetRun(ctx, pool, run.ID); err != nil || r.Status != jobs.StatusSucceeded {
		t.Fatalf("run %+v, %v; want it worked to its report after the outage\n%s", r, err, w.stderr())
	}
	if !strings.Contains(w.stdout(), "worker running") {
		t.Fatalf("gb worker never said it runs: %q", w.stdout())
	}
	// One warning per wait, each with the error and its attempt, in order.
	for i, line := range w.waits() {
		if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "err=") ||
			!strings.Contains(line, fmt.Sprintf("attempt=%d ", i+1)) {
			t.Errorf("wait %d: %s", i+1, line)
		}
	}
	if code := w.stop(t); code != exitOK {
		t.Fatalf("gb worker stopped with %d after SIGTERM, want %d\n%s", code, exitOK, w.stderr())
	}
}

// TestWorkerStopsWhileWaitingForPostgres: SIGTERM ends the waits; gb
// worker exits as terminated (143), never having run.
func TestWorkerStopsWhileWaitingForPostgres(t *testing.T) {
	t.Parallel()
	proxy, proxied := proxiedURL(t, dbtest.NewURL(t))
	proxy.Down()
	w := startWaitingWorker(t, buildGB(t), proxied)
	waitFor(t, 60*time.Second, "a wait for the database", func() bool { return len(w.waits()) >= 1 || w.exited() })
	if code := w.stop(t); code != exitTerminated || strings.Contains(w.stdout(), "worker running") {
		t.Fatalf("gb worker stopped with %d (want %d) and said %q\n%s", code, exitTerminated, w.stdout(), w.stderr())
	}
}

// TestWorkerStartWaits: the waits double from 1 s to at most 30 s, each
// less a random part of up to half (both ends reached), and never under
// 1 s once the caller's floor is applied.
func TestWorkerStartWaits(t *testing.T) {
	t.Parallel()
	steps := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30} // seconds
	lo, hi := make([]time.Duration, len(steps)), make([]time.Duration, len(steps))
	for round := range 2000 {
		b := startWaits()
		for i, step := range steps {
			step *= time.Second
			d := max(b.NextBackOff(), waitMin)
			if d < max(step/2, waitMin) || d > step+time.Nanosecond {
				t.Fatalf("wait %d: %s, want within [%s, %s]", i+1, d, max(step/2, waitMin), step)
			}
			if round == 0 || d < lo[i] {
				lo[i] = d
			}
			hi[i] = max(hi[i], d)
		}
	}
	for i, step := range steps {
		step *= time.Second
		if least := max(step/2, waitMin); lo[i] > least+step/20 || hi[i] < step-step/20 {
			t.Errorf("wait %d spans [%s, %s] over 2000 draws, want about [%s, %s]", i+1, lo[i], hi[i], least, step)
		}
	}
}

// TestWorkerWaitsOnlyForAnUnreachableDatabase: connection failures and
// timeouts are worth a wait; a refused login, a missing database and
// other errors are not.
func TestWorkerWaitsOnlyForAnUnreachableDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, refused := db.Open(ctx, db.PoolConfig{URL: "postgres://gb@127.0.0.1:1/gb?sslmode=disable&connect_timeout=2"})
	for _, tc := range []struct {
		err  error
		wait bool
	}{
		{refused, true},
		{fmt.Errorf("error connecting to database: %w", context.DeadlineExceeded), true},
		{&pgconn.PgError{Code: "57P03"}, true},  // the database system is starting up
		{&pgconn.PgError{Code: "28P01"}, false}, // password authentication failed
		{&pgconn.PgError{Code: "3D000"}, false}, // database does not exist
		{errors.New("DATABASE_URL is required"), false},
	} {
		if got := worthWaiting(tc.err); got != tc.wait {
			t.Errorf("%v: worth waiting %v, want %v", tc.err, got, tc.wait)
		}
	}
}

// proxiedURL returns a TCP proxy to url's server and url through it.
func proxiedURL(t *testing.T, url string) (*lambdatest.TCPProxy, string) {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := lambdatest.NewTCPProxy(t, u.Host)
	u.Host = proxy.Addr
	return proxy, u.String()
}

// waitingWorker is `gb worker` as a child process, with its output.
type waitingWorker struct {
	cmd  *exec.Cmd
	out  lockedBuffer
	err  lockedBuffer
	done chan struct{}
}

func startWaitingWorker(t *testing.T, bin, url string) *waitingWorker {
	t.Helper()
	w := &waitingWorker{cmd: exec.Command(bin, "worker"), done: make(chan struct{})}
	w.cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "GB_OFFLINE_DELAY=50ms", "GB_STEP_TIMEOUT=5s",
		"OPENAI_API_KEY=", "GB_LOG_LEVEL=info")
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.err
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		<-w.done
	})
	return w
}

func (w *waitingWorker) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and returns the exit code.
func (w *waitingWorker) stop(t *testing.T) int {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("gb worker did not stop after SIGTERM\n%s", w.stderr())
	}
	return w.cmd.ProcessState.ExitCode()
}

func (w *waitingWorker) stdout() string { return w.out.String() }
func (w *waitingWorker) stderr() string { return w.err.String() }

var waitLine = regexp.MustCompile(`(?m)^.*database unreachable; gb worker waits for it.*$`)

// waits returns the log lines of the worker's waits for the database.
func (w *waitingWorker) waits() []string { return waitLine.FindAllString(w.stderr(), -1) }

// lockedBuffer is a strings.Builder safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
