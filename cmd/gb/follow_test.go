package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/messenger"
)

// requestLog records the requests an API answered, by path, and the
// Last-Event-ID headers of its stream requests.
type requestLog struct {
	mu      sync.Mutex
	paths   []string
	lastIDs []string
}

func (l *requestLog) count(suffix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, p := range l.paths {
		if strings.HasSuffix(p, suffix) {
			n++
		}
	}
	return n
}

// cutWriter aborts its connection once it has written cut event frames.
type cutWriter struct {
	http.ResponseWriter
	cut, frames int
}

func (w *cutWriter) Write(p []byte) (int, error) {
	for _, f := range bytes.SplitAfter(p, []byte("\n\n")) {
		if _, err := w.ResponseWriter.Write(f); err != nil {
			return 0, err
		}
		if bytes.HasPrefix(f, []byte("id: ")) {
			if w.frames++; w.frames == w.cut {
				_ = http.NewResponseController(w.ResponseWriter).Flush()
				panic(http.ErrAbortHandler) // the connection drops in the middle of a batch
			}
		}
	}
	return len(p), nil
}

func (w *cutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// followStack serves the API over a working agent (offline model), its
// stream route answered by stream: "ok" serves it (its first connection
// cut after two events), "501" is a deployment that cannot stream, "404"
// a server that has no such route, "429" a user with the most streams
// open.
func followStack(t *testing.T, stream string) (*apiClient, *requestLog, *jobs.Service) {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t), MaxConns: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{{Source: "sync/once.go", Title: "sync.Once",
		Body: "Once is an object that will perform exactly one action. Do calls the function f if and only if Do is being called for the first time."}}); err != nil {
		t.Fatal(err)
	}
	listener := messenger.NewListener(pool, nil)
	if err := listener.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Stop(context.Background()) })
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{Delay: 50 * time.Millisecond}, Work: true,
		Messenger: messenger.NewPostgres(pool, listener, messenger.PostgresConfig{})})
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
	d := httpapi.Deps{Service: agent, Notifier: listener, StreamHeartbeat: 200 * time.Millisecond}
	if stream == "501" {
		d.NoStream = "this deployment's gateway buffers answers"
	}
	api := httpapi.New(d)
	log := &requestLog{}
	var cuts sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.mu.Lock()
		log.paths = append(log.paths, r.URL.Path)
		isStream := strings.HasSuffix(r.URL.Path, "/events/stream")
		if isStream {
			log.lastIDs = append(log.lastIDs, r.Header.Get("Last-Event-ID"))
		}
		log.mu.Unlock()
		switch {
		case isStream && stream == "404":
			http.NotFound(w, r)
		case isStream && stream == "429":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"code":"too_many_streams","message":"you already have 4 event streams open"}}`))
		case isStream && stream == "ok":
			cut := false
			cuts.Do(func() { cut = true })
			if cut {
				w = &cutWriter{ResponseWriter: w, cut: 2}
			}
			api.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	key, err := jobs.CreateKey(ctx, pool, "follower")
	if err != nil {
		t.Fatal(err)
	}
	return &apiClient{base: srv.URL, key: key, http: &http.Client{Timeout: clientTimeout}}, log, agent
}

// TestFollowReadsTheStream follows a research of sub-agents to its end
// over the event stream whose first connection drops after two events:
// the follow reconnects with Last-Event-ID and hands on every event of
// the tree once, in order, with no long poll. Where the stream route
// answers 501, 404 or 429, the follow falls back to the long poll and
// hands on the same.
func TestFollowReadsTheStream(t *testing.T) {
	t.Parallel()
	for _, stream := range []string{"ok", "501", "404", "429"} {
		t.Run(stream, func(t *testing.T) {
			t.Parallel()
			c, log, agent := followStack(t, stream)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var run jobs.Run
			if err := c.do(ctx, "POST", "/v1/gb/research", map[string]any{
				"topic": "What does sync.Once do, and when does Do call f?"}, &run); err != nil {
				t.Fatal(err)
			}
			var got []jobs.Event
			if err := followTree(ctx, c, run.ID, 0, func(evs []jobs.Event) error {
				got = append(got, evs...)
				return nil
			}); err != nil {
				t.Fatalf("follow: %v", err)
			}
			all, err := jobs.Events(ctx, agent.Pool(), run.ID, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(all) || len(all) < 3 {
				t.Fatalf("the follow handed on %d events; the tree has %d", len(got), len(all))
			}
			for i := range all {
				if got[i].Seq != all[i].Seq || got[i].N != int64(i+1) {
					t.Fatalf("event %d: followed %+v, the tree has %+v", i+1, got[i], all[i])
				}
			}
			streams, polls := log.count("/events/stream"), log.count("/events")
			switch stream {
			case "ok":
				log.mu.Lock()
				ids := log.lastIDs
				log.mu.Unlock()
				if streams < 2 || polls != 0 || ids[0] != "" || ids[1] != "2" {
					t.Fatalf("%d stream requests (Last-Event-ID %q), %d long polls; want a reconnection after event 2 and no poll",
						streams, ids, polls)
				}
			default:
				if streams != 1 || polls == 0 {
					t.Fatalf("%d stream requests, %d long polls; want one refused stream, then long polls", streams, polls)
				}
			}
		})
	}
}
