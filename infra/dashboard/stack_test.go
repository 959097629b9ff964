package dashboard_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/messenger"
)

// stack is what `gb dev` runs, built in the test: the API (and so the
// dashboard) over a fresh database with a worker on the offline model and
// the Postgres messenger.
type stack struct {
	pool   *pgxpool.Pool
	agent  *jobs.Agent
	srv    *httptest.Server
	key    string
	userID int64
	// eventPolls counts the requests for events, longPolls those that
	// asked to wait; with ignoreWait set, the server does not see wait.
	eventPolls, longPolls atomic.Int64
	ignoreWait            bool
}

// startStack serves a stack with a small Go-docs dataset and one user's
// key; everything stops when the test ends.
func startStack(t *testing.T, modelDelay time.Duration, ignoreWait bool) *stack {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	loadGoDocs(t, pool)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	listener := messenger.NewListener(pool, logger)
	if err := listener.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Stop(context.Background()) })
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{Delay: modelDelay}, Logger: logger,
		Messenger: messenger.NewPostgres(pool, listener, messenger.PostgresConfig{}), Work: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = agent.Stop(sctx)
	})
	key, err := jobs.CreateKey(ctx, pool, "browser")
	if err != nil {
		t.Fatal(err)
	}
	uid, err := jobs.UserID(ctx, pool, "browser")
	if err != nil {
		t.Fatal(err)
	}
	st := &stack{pool: pool, agent: agent, key: key, userID: uid, ignoreWait: ignoreWait}
	api := httpapi.New(httpapi.Deps{Agent: agent, Logger: logger})
	st.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			st.eventPolls.Add(1)
			if r.URL.Query().Get("wait") != "" && r.URL.Query().Get("wait") != "0" {
				st.longPolls.Add(1)
			}
			if st.ignoreWait {
				q := r.URL.Query()
				q.Del("wait")
				r.URL.RawQuery = q.Encode()
			}
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(st.srv.Close)
	return st
}

// loadGoDocs loads the documentation of the packages the demo topic asks
// about as the default dataset.
func loadGoDocs(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	src := filepath.Join(runtime.GOROOT(), "src")
	var paths []string
	for _, p := range []string{"context", "sync", "time", "errors", "net/http", "io"} {
		paths = append(paths, filepath.Join(src, p))
	}
	docs, err := kb.FromPaths(paths)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Load(context.Background(), pool, jobs.DefaultDataset, docs); err != nil {
		t.Fatal(err)
	}
}

// waitEnded polls a run until it ends.
func waitEnded(t *testing.T, pool *pgxpool.Pool, id int64, within time.Duration) *jobs.Run {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		run, err := jobs.GetRun(context.Background(), pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Ended() {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d did not end within %s: %s, %s", id, within, run.Status, run.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
