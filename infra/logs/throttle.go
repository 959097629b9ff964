// Package logs has the slog handlers the commands and the functions share.
//
// Throttle keeps a database outage from flooding the log: while Postgres is
// unreachable every part of a worker (River's producer polls ten times a
// second, its notifier, elector, completer and maintenance services, the
// message listener, the steps themselves) logs the same connection failure
// again and again. Throttle lets the first such record through, then at
// most one summary per interval, and one record when the outage is over.
//
// InertAttrs (inert.go) makes the text of every record inert, so a log
// that quotes untrusted text cannot drive the terminal that shows it.
//
// It may import infra/inert.
package logs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Defaults of ThrottleOptions.
const (
	IntervalDefault   = 30 * time.Second
	QuietDefault      = 15 * time.Second
	ProbeEveryDefault = time.Second
	SettleDefault     = 5 * time.Second
	probeTimeout      = 5 * time.Second
)

// ThrottleOptions tune a Throttle. The zero value is ready to use.
type ThrottleOptions struct {
	// Interval is the least time between two summaries of the records
	// suppressed during an outage (IntervalDefault when 0).
	Interval time.Duration
	// Quiet ends an outage when no probe is set: once no connection
	// failure was logged for this long, the outage is taken to be over
	// (QuietDefault when 0).
	Quiet time.Duration
	// ProbeEvery is how often the probe (see SetProbe) checks the database
	// during an outage (ProbeEveryDefault when 0).
	ProbeEvery time.Duration
	// Settle is how long the probe must keep succeeding before the outage
	// is declared over (SettleDefault when 0): failures logged late by
	// operations that began while the database was away are counted with
	// the outage instead of starting a new one.
	Settle time.Duration
	// IsFailure tells the records that report a lost database connection
	// (IsConnFailure when nil).
	IsFailure func(slog.Record) bool
}

// Throttle is a slog.Handler that throttles the records of a database
// outage and passes every other record on unchanged.
//
// An outage starts with the first record of WARN level or above that
// IsFailure recognizes; that record passes, with a throttle attribute saying so.
// Later failure records are counted instead, and the first of them after
// each Interval is replaced by one summary ("database unreachable; N similar
// records suppressed") at the highest level counted. The outage ends when
// the probe has succeeded for Settle ("database reachable again", its
// down_for running to the first success) or, without a probe, after Quiet
// with no failure record ("database connection errors stopped"); that
// record is INFO. A failure after that starts a new outage.
//
// The handlers derived with WithAttrs and WithGroup share the state of the
// one they come from, so an outage is counted once per process however many
// loggers its components use.
type Throttle struct {
	next slog.Handler
	s    *throttleState
}

type throttleState struct {
	base       slog.Handler // the handler given to NewThrottle: outage-end records go there
	interval   time.Duration
	quiet      time.Duration
	probeEvery time.Duration
	settle     time.Duration
	isFailure  func(slog.Record) bool

	mu          sync.Mutex
	probe       func(context.Context) error
	down        bool
	since       time.Time  // first failure of the outage
	backAt      time.Time  // first probe success since the latest failed probe; zero if none
	last        time.Time  // latest failure of the outage
	lastSummary time.Time  // the first record or the latest summary
	pending     int        // failures suppressed since lastSummary
	pendingMax  slog.Level // highest level among them
	total       int        // failures suppressed during the outage
	lastMsg     string     // message and error of the latest suppressed failure
	lastErr     string
	quietTimer  *time.Timer
	probing     bool
	stop        chan struct{} // closed by Close
	closed      bool
}

// NewThrottle wraps next.
func NewThrottle(next slog.Handler, opts ThrottleOptions) *Throttle {
	s := &throttleState{
		base:       next,
		interval:   positive(opts.Interval, IntervalDefault),
		quiet:      positive(opts.Quiet, QuietDefault),
		probeEvery: positive(opts.ProbeEvery, ProbeEveryDefault),
		settle:     positive(opts.Settle, SettleDefault),
		isFailure:  opts.IsFailure,
		stop:       make(chan struct{}),
	}
	if s.isFailure == nil {
		s.isFailure = IsConnFailure
	}
	return &Throttle{next: next, s: s}
}

func positive(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// SetProbe sets a check of the database, such as a pool's Ping, that ends an
// outage as soon as it succeeds. It is called every ProbeEvery during an
// outage, with a timeout of its own. nil goes back to ending outages after a
// quiet period.
func (h *Throttle) SetProbe(probe func(context.Context) error) {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probe = probe
	if s.down {
		s.armLocked()
	}
}

// Close stops the probe and the timers; records still pass through it,
// and an outage still in course is never reported as over.
func (h *Throttle) Close() {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.stop)
	if s.quietTimer != nil {
		s.quietTimer.Stop()
	}
}

// Down reports whether an outage is in course.
func (h *Throttle) Down() bool {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.s.down
}

// Enabled implements slog.Handler.
func (h *Throttle) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// WithAttrs implements slog.Handler.
func (h *Throttle) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Throttle{next: h.next.WithAttrs(attrs), s: h.s}
}

// WithGroup implements slog.Handler.
func (h *Throttle) WithGroup(name string) slog.Handler {
	return &Throttle{next: h.next.WithGroup(name), s: h.s}
}

// Handle implements slog.Handler.
func (h *Throttle) Handle(ctx context.Context, r slog.Record) error {
	s := h.s
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	failure := s.isFailure(r)
	now := time.Now()
	s.mu.Lock()
	if !failure && !(s.down && isCompanion(r.Message)) {
		s.mu.Unlock()
		return h.next.Handle(ctx, r)
	}
	if !s.down { // the first failure: it starts an outage and passes
		s.down = true
		s.since, s.last, s.lastSummary, s.backAt = now, now, now, time.Time{}
		s.pending, s.total, s.pendingMax = 0, 0, r.Level
		s.armLocked()
		interval := s.interval
		s.mu.Unlock()
		r = r.Clone()
		r.AddAttrs(slog.String("throttle", fmt.Sprintf("similar records are summarized every %s until the database is back", interval)))
		return h.next.Handle(ctx, r)
	}
	s.last = now
	s.pending++
	s.total++
	if s.pending == 1 || r.Level > s.pendingMax {
		s.pendingMax = max(r.Level, slog.LevelWarn)
	}
	s.lastMsg, s.lastErr = r.Message, errorText(r)
	s.resetQuietLocked()
	if now.Sub(s.lastSummary) < s.interval {
		s.mu.Unlock()
		return nil
	}
	sum := slog.NewRecord(now, s.pendingMax, fmt.Sprintf("database unreachable; %d similar records suppressed", s.pending), r.PC)
	sum.AddAttrs(slog.Int("suppressed", s.pending), slog.Duration("down_for", now.Sub(s.since).Round(time.Millisecond)),
		slog.String("last_msg", s.lastMsg))
	if s.lastErr != "" {
		sum.AddAttrs(slog.String("err", s.lastErr))
	}
	s.pending, s.lastSummary = 0, now
	s.mu.Unlock()
	if !h.next.Enabled(ctx, sum.Level) {
		return nil
	}
	return h.next.Handle(ctx, sum)
}

// armLocked starts what will end the outage: the probe loop when there is
// a probe, the quiet timer otherwise.
func (s *throttleState) armLocked() {
	if s.closed {
		return
	}
	if s.probe != nil {
		if s.quietTimer != nil {
			s.quietTimer.Stop()
		}
		if !s.probing {
			s.probing = true
			go s.probeLoop()
		}
		return
	}
	s.resetQuietLocked()
}

func (s *throttleState) resetQuietLocked() {
	if s.probe != nil || s.closed {
		return
	}
	if s.quietTimer == nil {
		s.quietTimer = time.AfterFunc(s.quiet, s.quietEnded)
		return
	}
	s.quietTimer.Reset(s.quiet)
}

func (s *throttleState) quietEnded() {
	s.mu.Lock()
	if !s.down || s.probe != nil || s.closed || time.Since(s.last) < s.quiet {
		s.mu.Unlock()
		return
	}
	s.endLocked("database connection errors stopped", s.last)
}

func (s *throttleState) probeLoop() {
	t := time.NewTicker(s.probeEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			s.mu.Lock()
			s.probing = false
			s.mu.Unlock()
			return
		case <-t.C:
		}
		s.mu.Lock()
		probe, down := s.probe, s.down
		if probe == nil || !down {
			s.probing = false
			if down {
				s.armLocked() // the probe was removed: fall back to the quiet timer
			}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		err := probe(ctx)
		cancel()
		now := time.Now()
		s.mu.Lock()
		switch {
		case !s.down || s.closed:
			s.probing = false
			s.mu.Unlock()
			return
		case err != nil:
			s.backAt = time.Time{}
		case s.backAt.IsZero():
			s.backAt = now
		}
		if s.backAt.IsZero() || now.Sub(s.backAt) < s.settle {
			s.mu.Unlock()
			continue
		}
		s.probing = false
		s.endLocked("database reachable again", s.backAt)
		return
	}
}

// endLocked ends the outage and logs msg; it unlocks s.mu.
func (s *throttleState) endLocked(msg string, end time.Time) {
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, msg, 0)
	rec.AddAttrs(slog.Duration("down_for", end.Sub(s.since).Round(time.Millisecond)),
		slog.Int("suppressed", s.total))
	if s.lastErr != "" {
		rec.AddAttrs(slog.String("last_err", s.lastErr))
	}
	s.down = false
	s.pending, s.total, s.lastMsg, s.lastErr = 0, 0, "", ""
	s.mu.Unlock()
	ctx := context.Background()
	if s.base.Enabled(ctx, rec.Level) {
		_ = s.base.Handle(ctx, rec)
	}
}

// companions are messages that carry no error of their own but only come
// with an outage (River's services giving up a round of retries); they are
// counted with the failures while an outage is in course.
var companions = []string{
	"too many errors; giving up",
	"reelection deadline elapsed",
	"failed to cleanly shutdown producer",
}

func isCompanion(msg string) bool {
	m := strings.ToLower(msg)
	for _, c := range companions {
		if strings.Contains(m, c) {
			return true
		}
	}
	return false
}

// IsConnFailure reports whether r says that a database connection could not
// be made or was lost: its error attribute (an error, or a string under the
// key err or error, as River logs them) or else its message reads like
// "connection refused", "terminating connection due to administrator
// command", "the database system is starting up", "failed to connect",
// "unexpected EOF" and the like, or carries SQLSTATE class 08 or 57P01-03.
// Errors of HTTP clients (their text names an http:// or https:// URL) are
// not database failures.
func IsConnFailure(r slog.Record) bool {
	found, failure := false, false
	r.Attrs(func(a slog.Attr) bool {
		if f, ok := attrFailure(a); ok {
			found, failure = true, f
			return !f
		}
		return true
	})
	if found {
		return failure
	}
	return ConnFailureText(r.Message)
}

// attrFailure looks at one attribute (and into groups); ok says whether it
// was an error attribute at all.
func attrFailure(a slog.Attr) (failure, ok bool) {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		for _, g := range v.Group() {
			if f, gok := attrFailure(g); gok {
				if f {
					return true, true
				}
				ok = true
			}
		}
		return false, ok
	case slog.KindAny:
		if err, isErr := v.Any().(error); isErr {
			return ConnFailure(err), true
		}
	case slog.KindString:
		if isErrKey(a.Key) {
			return ConnFailureText(v.String()), true
		}
	}
	return false, false
}

func isErrKey(k string) bool {
	switch strings.ToLower(k) {
	case "err", "error", "last_err", "cause":
		return true
	}
	return false
}

// ConnFailure reports whether err is the failure of a database connection.
func ConnFailure(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return connSQLState(pgErr.Code)
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	return ConnFailureText(err.Error())
}

func connSQLState(code string) bool {
	return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
}

// connTexts are pieces of the messages of pgx, libpq, Postgres and the
// network stack when a connection is refused, cut or not yet possible.
var connTexts = []string{
	"connection refused",
	"connection reset by peer",
	"broken pipe",
	"no route to host",
	"network is unreachable",
	"server closed the connection unexpectedly",
	"terminating connection due to administrator command",
	"terminating connection due to unexpected postmaster exit",
	"terminating connection because of crash of another server process",
	"the database system is shutting down",
	"the database system is starting up",
	"the database system is in recovery mode",
	"the database system is not yet accepting connections",
	"the database system is not accepting connections",
	"could not connect to server",
	"no connection to the server",
	"failed to connect",
	"dial error",
	"conn closed",
	"unexpected eof",
	"failed to receive message",
	"failed to write startup message",
	"sqlstate 57p01",
	"sqlstate 57p02",
	"sqlstate 57p03",
	"(sqlstate 08",
}

// ConnFailureText reports whether an error message reads like the failure
// of a database connection (see IsConnFailure).
func ConnFailureText(s string) bool {
	if s == "" {
		return false
	}
	m := strings.ToLower(s)
	if strings.Contains(m, "http://") || strings.Contains(m, "https://") {
		return false
	}
	if m == "eof" || strings.HasSuffix(m, ": eof") {
		return true
	}
	for _, t := range connTexts {
		if strings.Contains(m, t) {
			return true
		}
	}
	return false
}

// errorText is the text of r's error attribute, if any.
func errorText(r slog.Record) string {
	var text string
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.Resolve()
		if err, ok := v.Any().(error); ok && v.Kind() == slog.KindAny {
			text = err.Error()
			return false
		}
		if v.Kind() == slog.KindString && isErrKey(a.Key) {
			text = v.String()
			return false
		}
		return true
	})
	return text
}
