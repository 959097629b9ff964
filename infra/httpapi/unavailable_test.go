package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// tcpProxy forwards connections to a Postgres server, or stands for one
// that is down: refusing connections, or accepting them and never answering.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	mode   string // "pass", "refuse" or "hang"
	conns  []net.Conn
	// refused and held count the connections refused and those held open
	// unanswered.
	refused, held int
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, mode: "pass"}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.setMode("refuse")
	})
	return p
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *tcpProxy) handle(c net.Conn) {
	p.mu.Lock()
	mode := p.mode
	if mode == "refuse" {
		p.refused++
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.conns = append(p.conns, c)
	if mode == "hang" {
		p.held++
	}
	p.mu.Unlock()
	if mode == "hang" {
		return // held open, never answered, closed by the next setMode
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// counts returns how many connections were refused and how many held.
func (p *tcpProxy) counts() (refused, held int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused, p.held
}

// setMode changes how new connections are treated and breaks every open one.
func (p *tcpProxy) setMode(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = mode
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// unavailableLog is the API's log handler in these tests: it keeps the
// error of each "database unavailable" record, the cause of a 503.
type unavailableLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *unavailableLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *unavailableLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "database unavailable" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *unavailableLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *unavailableLog) WithGroup(string) slog.Handler      { return l }

// take returns the errors logged since the last take.
func (l *unavailableLog) take() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	errs := l.errs
	l.errs = nil
	return errs
}

// timedOut reports whether err is the end of the request's database
// timeout rather than a failure of the database itself.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

// downBundle serves the API over a pool that reaches its database through
// a proxy the test controls, with a short per-request database timeout.
type downBundle struct {
	*testBundle
	proxy *tcpProxy
	url   string // the database's own URL, not through the proxy
	log   *unavailableLog
}

func setupBehindProxy(t *testing.T, timeout time.Duration) *downBundle {
	t.Helper()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	pool, err := db.Open(ctx, db.PoolConfig{URL: u.String(), Proxy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, "godoc", []kb.Document{{Source: "s", Title: "t", Body: "b"}}); err != nil {
		t.Fatal(err)
	}
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	key, err := jobs.CreateKey(ctx, pool, "alice")
	if err != nil {
		t.Fatal(err)
	}
	b := &testBundle{agent: agent, alice: key}
	log := &unavailableLog{}
	b.srv = httptest.NewServer(validated(t, httpapi.New(httpapi.Deps{Service: agent, DBTimeout: timeout, Logger: slog.New(log)})))
	t.Cleanup(b.srv.Close)
	return &downBundle{testBundle: b, proxy: p, url: dbURL, log: log}
}

// everyRoute is one request per route of the API, on run id.
func everyRoute(id string) [][3]string {
	return [][3]string{
		{"POST", "/v1/gb/research", `{"topic":"while the database is down"}`},
		{"GET", "/v1/gb/research?status=working", ""},
		{"GET", "/v1/gb/research/" + id, ""},
		{"DELETE", "/v1/gb/research/" + id, ""},
		{"POST", "/v1/gb/research/" + id + "/cancel", ""},
		{"GET", "/v1/gb/research/" + id + "/tree", ""},
		{"GET", "/v1/gb/research/" + id + "/events", ""},
		{"GET", "/v1/gb/research/" + id + "/messages", ""},
		{"POST", "/v1/gb/research/" + id + "/messages", `{"text":"hello"}`},
	}
}

// assert503 checks that an answer says the database is unavailable: 503,
// a Retry-After in seconds and a JSON error with code "unavailable".
func assert503(t *testing.T, what string, resp *http.Response, data []byte) {
	t.Helper()
	code, _ := jsonError(t, resp, data)
	if resp.StatusCode != http.StatusServiceUnavailable || code != "unavailable" || resp.Header.Get("Retry-After") != fmt.Sprint(httpapi.RetryAfterSeconds) {
		t.Errorf("%s: got %d Retry-After %q %s, want 503 unavailable with Retry-After %d",
			what, resp.StatusCode, resp.Header.Get("Retry-After"), data, httpapi.RetryAfterSeconds)
	}
}

func TestDatabaseDownAnswers503(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	b := setupBehindProxy(t, timeout)
	auth := http.Header{"Authorization": {"Bearer " + b.alice}}
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"before the outage"}`)
	if code != http.StatusAccepted {
		t.Fatalf("create while up: %d %v", code, run)
	}
	id := fmt.Sprint(run["id"])

	t.Run("refused", func(t *testing.T) {
		// Every connection is refused: each request fails on the refusal,
		// not at the end of its database timeout. The pool drops the
		// connections the outage broke, so that each request connects
		// (TestTerminatedBackendsAnswer503 fails on old connections).
		b.proxy.setMode("refuse")
		b.agent.Pool().Reset()
		b.log.take()
		for _, rt := range everyRoute(id) {
			what := rt[0] + " " + rt[1]
			before, _ := b.proxy.counts()
			resp, data := b.raw(t, rt[0], rt[1], auth, rt[2])
			assert503(t, what, resp, data)
			errs := b.log.take()
			if len(errs) != 1 || timedOut(errs[0]) {
				t.Errorf("%s: logged %v, want the one failure to reach the database, not the request's timeout", what, errs)
			}
			if refused, _ := b.proxy.counts(); refused == before {
				t.Errorf("%s: no connection to the database was tried", what)
			}
		}
	})
	t.Run("silent", func(t *testing.T) {
		// The server accepts connections and never answers: the request's
		// database timeout ends the wait.
		b.proxy.setMode("hang")
		b.log.take()
		for _, rt := range everyRoute(id)[:3] {
			what := rt[0] + " " + rt[1]
			_, before := b.proxy.counts()
			resp, data := b.raw(t, rt[0], rt[1], auth, rt[2])
			assert503(t, what, resp, data)
			if errs := b.log.take(); len(errs) != 1 || !timedOut(errs[0]) {
				t.Errorf("%s: logged %v, want the one timeout of the request's database wait", what, errs)
			}
			if _, held := b.proxy.counts(); held == before {
				t.Errorf("%s: no connection to the database was held unanswered", what)
			}
		}
	})
	b.proxy.setMode("pass")
	if code, got := b.call(t, b.alice, "GET", "/v1/gb/research/"+id, ""); code != http.StatusOK || got["topic"] != "before the outage" {
		t.Fatalf("after the outage: %d %v", code, got)
	}
}

// TestTerminatedBackendsAnswer503 ends the API's sessions the way an
// operator or a failover does and refuses new ones: the server's own errors
// (57P01 on the old connections, a refused connect on new ones) are 503s.
func TestTerminatedBackendsAnswer503(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupBehindProxy(t, 5*time.Second)
	code, run := b.call(t, b.alice, "POST", "/v1/gb/research", `{"topic":"before the outage"}`)
	if code != http.StatusAccepted {
		t.Fatalf("create while up: %d %v", code, run)
	}
	admin, err := pgx.Connect(ctx, dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := strings.TrimPrefix(mustParse(t, b.url).Path, "/")
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	var ended int
	if err := admin.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1", name).Scan(&ended); err != nil || ended == 0 {
		t.Fatalf("terminated %d backends: %v", ended, err)
	}
	auth := http.Header{"Authorization": {"Bearer " + b.alice}}
	for _, rt := range everyRoute(fmt.Sprint(run["id"])) {
		resp, data := b.raw(t, rt[0], rt[1], auth, rt[2])
		assert503(t, rt[0]+" "+rt[1], resp, data)
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" ALLOW_CONNECTIONS true"); err != nil {
		t.Fatal(err)
	}
	if code, _ := b.call(t, b.alice, "GET", "/v1/gb/research", ""); code != http.StatusOK {
		t.Fatalf("after connections are allowed again: %d", code)
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
