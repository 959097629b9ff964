package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// recorder keeps the records that reach it, with the attributes of the
// handler they went through.
type recorder struct {
	mu    *sync.Mutex
	recs  *[]rec
	attrs []slog.Attr
}

type rec struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func newRecorder() *recorder { return &recorder{mu: new(sync.Mutex), recs: new([]rec)} }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, record slog.Record) error {
	m := map[string]string{}
	for _, a := range r.attrs {
		m[a.Key] = a.Value.String()
	}
	record.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.recs = append(*r.recs, rec{level: record.Level, msg: record.Message, attrs: m})
	return nil
}

func (r *recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recorder{mu: r.mu, recs: r.recs, attrs: append(append([]slog.Attr{}, r.attrs...), attrs...)}
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) all() []rec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rec(nil), *r.recs...)
}

func (r *recorder) messages() []string {
	var out []string
	for _, x := range r.all() {
		out = append(out, x.msg)
	}
	return out
}

const refused = "failed to connect to `user=gb database=gb`: 127.0.0.1:54329 (127.0.0.1): dial error: dial tcp 127.0.0.1:54329: connect: connection refused"

// outage logs what a worker logs while Postgres is down: River's producer
// every 100ms (a string err, as River logs it), a step failure (an error
// value) every second, and unrelated records in between.
func outage(logger *slog.Logger, d time.Duration) {
	river := logger.With("component", "river")
	for i := 0; time.Duration(i)*100*time.Millisecond < d; i++ {
		river.Error("producer: Error fetching jobs", slog.String("err", refused), "queue", "default")
		if i%10 == 0 {
			logger.Warn("step failed", "err", fmt.Errorf("loading run: %w", &pgconn.ConnectError{}))
			logger.Info("producer: Producer job counts", "num_jobs_running", 0)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestThrottleSummarizesAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newRecorder()
		h := NewThrottle(out, ThrottleOptions{Interval: 30 * time.Second, Quiet: 5 * time.Second})
		defer h.Close()
		logger := slog.New(h)

		logger.Error("unrelated", "err", errors.New("duplicate key value violates unique constraint"))
		start := time.Now()
		outage(logger, 90*time.Second) // 900 producer errors, 90 step failures
		end := time.Now()
		logger.Info("back to work")
		time.Sleep(6 * time.Second) // the quiet period ends the outage
		synctest.Wait()

		recs := out.all()
		var errs, summaries, infos int
		var suppressed int
		for _, r := range recs {
			switch {
			case strings.HasPrefix(r.msg, "database unreachable"):
				summaries++
				var n int
				fmt.Sscan(r.attrs["suppressed"], &n)
				suppressed += n
				if r.level != slog.LevelError {
					t.Errorf("summary at %s, want ERROR (the highest level suppressed)", r.level)
				}
				if r.attrs["err"] == "" || r.attrs["last_msg"] == "" || r.attrs["down_for"] == "" {
					t.Errorf("summary without err, last_msg or down_for: %v", r.attrs)
				}
			case r.level == slog.LevelInfo:
				infos++
			}
			if r.level >= slog.LevelWarn {
				errs++
			}
		}
		// 1 unrelated + 1 first failure + one summary at 30s, 60s and 90s at most.
		if summaries < 2 || summaries > 3 {
			t.Errorf("%d summaries in a 90s outage with a 30s interval, want 2 or 3: %v", summaries, out.messages())
		}
		if errs > 5 {
			t.Errorf("%d WARN/ERROR records in a 90s outage, want at most 5: %v", errs, out.messages())
		}
		if recs[0].msg != "unrelated" {
			t.Errorf("first record %q: a record that is no connection failure must pass", recs[0].msg)
		}
		first := recs[1]
		if first.msg != "producer: Error fetching jobs" || first.attrs["throttle"] == "" || first.attrs["component"] != "river" {
			t.Errorf("second record %q %v, want the first failure, marked, with its handler's attributes", first.msg, first.attrs)
		}
		if infos != 90+2 {
			t.Errorf("%d INFO records passed, want the 90 job counts, the back-to-work and the end of the outage", infos)
		}
		last := recs[len(recs)-1]
		if last.msg != "database connection errors stopped" || last.level != slog.LevelInfo {
			t.Fatalf("last record %q at %s, want the end of the outage", last.msg, last.level)
		}
		var total int
		fmt.Sscan(last.attrs["suppressed"], &total)
		if total != 900+90-1 {
			t.Errorf("end of outage says %d suppressed, want %d", total, 900+90-1)
		}
		if total < suppressed {
			t.Errorf("summaries counted %d, more than the total %d", suppressed, total)
		}
		if d, _ := time.ParseDuration(last.attrs["down_for"]); d < end.Sub(start)-time.Second || d > end.Sub(start) {
			t.Errorf("down_for %s, want about %s", last.attrs["down_for"], end.Sub(start))
		}
		if h.Down() {
			t.Error("still down after the quiet period")
		}

		// A new failure is a new outage: it passes again.
		logger.Error("producer: Error fetching jobs", "err", refused)
		if got := out.all(); got[len(got)-1].msg != "producer: Error fetching jobs" {
			t.Errorf("a failure after the outage ended was suppressed")
		}
	})
}

func TestThrottleProbeEndsTheOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newRecorder()
		h := NewThrottle(out, ThrottleOptions{Interval: 30 * time.Second, ProbeEvery: time.Second})
		defer h.Close()
		var up atomic.Bool
		var probes atomic.Int32
		h.SetProbe(func(ctx context.Context) error {
			probes.Add(1)
			if !up.Load() {
				return errors.New("connection refused")
			}
			return nil
		})
		logger := slog.New(h).With("component", "agent")
		go func() {
			time.Sleep(20 * time.Second)
			up.Store(true)
		}()
		outage(logger, 20*time.Second)
		// A failure logged late, by an operation that began during the
		// outage, is counted with it rather than starting another.
		time.Sleep(2 * time.Second)
		logger.Error("jobcompleter.BatchCompleter: Too many errors; giving up")
		logger.Error("jobcompleter.BatchCompleter: Error completing batch", "err", refused)
		if !h.Down() {
			t.Fatal("the outage ended before the probe had succeeded for the settle period")
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if h.Down() {
			t.Fatal("still down although the probe succeeds")
		}
		recs := out.all()
		last := recs[len(recs)-1]
		if last.msg != "database reachable again" || last.level != slog.LevelInfo {
			t.Fatalf("last record %q, want the probe's end of the outage: %v", last.msg, out.messages())
		}
		if d, _ := time.ParseDuration(last.attrs["down_for"]); d < 20*time.Second || d > 22*time.Second {
			t.Errorf("down_for %s, want 20-21s", last.attrs["down_for"])
		}
		if n := probes.Load(); n < 19+5 || n > 22+6 {
			t.Errorf("%d probes in a 20s outage probed every second, with 5s to settle", n)
		}
		var total int
		fmt.Sscan(last.attrs["suppressed"], &total)
		if want := 200 + 20 - 1 + 2; total != want {
			t.Errorf("end of outage says %d suppressed, want %d (with the 2 late records)", total, want)
		}
		for _, r := range recs {
			if strings.HasPrefix(r.msg, "database unreachable") {
				t.Errorf("a summary within the first interval: %v", out.messages())
			}
		}
		// No probe runs while the database is up.
		n := probes.Load()
		time.Sleep(10 * time.Second)
		if probes.Load() != n {
			t.Errorf("the probe ran %d times while no outage was in course", probes.Load()-n)
		}
	})
}

func TestThrottleCompanionRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newRecorder()
		h := NewThrottle(out, ThrottleOptions{})
		defer h.Close()
		logger := slog.New(h)
		// Outside an outage a companion record passes.
		logger.Error("jobcompleter.BatchCompleter: Too many errors; giving up")
		logger.Error("producer: Error fetching jobs", "err", refused)
		logger.Error("jobcompleter.BatchCompleter: Too many errors; giving up")
		logger.Warn("leadership.Elector: Current leader stepping down because the reelection deadline elapsed")
		want := []string{"jobcompleter.BatchCompleter: Too many errors; giving up", "producer: Error fetching jobs"}
		if got := out.messages(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

func TestThrottleSharedAcrossDerivedHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newRecorder()
		h := NewThrottle(out, ThrottleOptions{})
		defer h.Close()
		a := slog.New(h).With("component", "river")
		b := slog.New(h).WithGroup("g").With("component", "messenger")
		a.Error("notifier.Notifier: Error connecting listener", "err", refused)
		b.Warn("message listener could not reconnect", "err", errors.New("connecting message listener: "+refused))
		a.Error("producer: Error fetching jobs", "err", refused)
		if n := len(out.all()); n != 1 {
			t.Errorf("%d records passed from two derived loggers in one outage, want 1: %v", n, out.messages())
		}
	})
}

// TestThrottleConcurrent runs under -race: many goroutines log failures and
// other records while the probe ends and new failures restart outages.
func TestThrottleConcurrent(t *testing.T) {
	out := newRecorder()
	h := NewThrottle(out, ThrottleOptions{Interval: 5 * time.Millisecond, ProbeEvery: time.Millisecond})
	defer h.Close()
	var up atomic.Bool
	h.SetProbe(func(context.Context) error {
		if up.Load() {
			return nil
		}
		return errors.New("down")
	})
	logger := slog.New(h)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			l := logger.With("g", g)
			for i := range 500 {
				if i%50 == 0 {
					up.Store(!up.Load())
				}
				l.Error("producer: Error fetching jobs", "err", refused)
				l.Info("other", "i", i)
			}
		})
	}
	wg.Wait()
	var infos int
	for _, r := range out.all() {
		if r.msg == "other" {
			infos++
		}
	}
	if infos != 8*500 {
		t.Errorf("%d of %d unrelated records passed", infos, 8*500)
	}
}

func TestIsConnFailure(t *testing.T) {
	record := func(level slog.Level, msg string, args ...any) slog.Record {
		r := slog.NewRecord(time.Now(), level, msg, 0)
		r.Add(args...)
		return r
	}
	cases := []struct {
		name string
		r    slog.Record
		want bool
	}{
		{"river string err", record(slog.LevelError, "producer: Error fetching jobs", "err", refused), true},
		{"river maintenance string error", record(slog.LevelError, "maintenance.JobScheduler: Error scheduling jobs", "error",
			"error starting transaction: "+refused), true},
		{"admin shutdown", record(slog.LevelError, "notifier.Notifier: Error from notification wait",
			"err", "FATAL: terminating connection due to administrator command (SQLSTATE 57P01)"), true},
		{"starting up", record(slog.LevelError, "x", "err", "FATAL: the database system is starting up (SQLSTATE 57P03)"), true},
		{"shutting down", record(slog.LevelError, "x", "err", "FATAL: the database system is shutting down (SQLSTATE 57P03)"), true},
		{"libpq", record(slog.LevelError, "x", "err", "server closed the connection unexpectedly"), true},
		{"eof", record(slog.LevelWarn, "x", "err", errors.New("reading: EOF")), true},
		{"unexpected eof", record(slog.LevelWarn, "x", "err", errors.New("failed to receive message: unexpected EOF")), true},
		{"pg error admin shutdown", record(slog.LevelWarn, "x", "err",
			fmt.Errorf("step: %w", &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"})), true},
		{"pg error class 08", record(slog.LevelWarn, "x", "err", &pgconn.PgError{Code: "08006"}), true},
		{"pg error unique", record(slog.LevelError, "x", "err", &pgconn.PgError{Code: "23505", Message: "duplicate key"}), false},
		{"connect error", record(slog.LevelError, "x", "err", &pgconn.ConnectError{}), true},
		{"message only", record(slog.LevelError, "failed to connect to `host=db`: connection refused"), true},
		{"message only, conn closed", record(slog.LevelError, "listener: conn closed"), true},
		{"unrelated error", record(slog.LevelError, "step failed", "err", errors.New("model said no")), false},
		{"error attr decides over message", record(slog.LevelError, "connection refused?", "err", errors.New("bad json")), false},
		{"http client refused", record(slog.LevelError, "model call failed", "err",
			errors.New(`Post "https://api.openai.com/v1/chat/completions": dial tcp: connect: connection refused`)), false},
		{"topic attr is not an error", record(slog.LevelWarn, "research started", "topic", "why connection refused?"), false},
		{"grouped error", record(slog.LevelError, "x", slog.Group("job", slog.String("err", refused))), true},
	}
	for _, c := range cases {
		if got := IsConnFailure(c.r); got != c.want {
			t.Errorf("%s: IsConnFailure = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestThrottleLevels: DEBUG and INFO records are never throttled, and a
// text handler beneath sees the first failure with its throttle attribute.
func TestThrottleLevels(t *testing.T) {
	var buf bytes.Buffer
	h := NewThrottle(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), ThrottleOptions{})
	defer h.Close()
	logger := slog.New(h)
	for range 3 {
		logger.Info("job errored; retrying", "error", refused)
		logger.Debug("retry", "err", refused)
	}
	for range 3 {
		logger.Error("producer: Error fetching jobs", "err", refused)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines, want 6 INFO/DEBUG and 1 ERROR:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[6], "level=ERROR") || !strings.Contains(lines[6], "throttle=") {
		t.Errorf("last line %q, want the first failure with a throttle attribute", lines[6])
	}
}

// A record that quotes hostile text reaches neither a JSON nor a text log
// with a control character of it.
func TestInertAttrsLeaveNoControl(t *testing.T) {
	hostile := "report \x1b]0;pwned\x07\x1b[2J \u009b31m \u202eevil"
	for _, mk := range []func(w *bytes.Buffer) slog.Handler{
		func(w *bytes.Buffer) slog.Handler {
			return slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: InertAttrs(nil)})
		},
		func(w *bytes.Buffer) slog.Handler {
			return slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: InertAttrs(nil)})
		},
	} {
		var buf bytes.Buffer
		log := slog.New(mk(&buf))
		log.Info("step of "+hostile, "agent", hostile, "err", errors.New(hostile), "n", 3,
			slog.Group("g", "text", hostile))
		out := buf.String()
		for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u202e", `\u001b`, `\x1b`} {
			if strings.Contains(out, bad) {
				t.Errorf("%q in the log line %s", bad, out)
			}
		}
		if !strings.Contains(out, "␛]0;pwned␇") || !strings.Contains(out, "n=3") && !strings.Contains(out, `"n":3`) {
			t.Errorf("the log line lost its text: %s", out)
		}
	}
}
