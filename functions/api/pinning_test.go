package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
)

// statementLog records the text of every statement a pool sends, as RDS
// Proxy sees it.
type statementLog struct {
	mu  sync.Mutex
	sql []string
}

func (l *statementLog) add(sql string) {
	l.mu.Lock()
	l.sql = append(l.sql, sql)
	l.mu.Unlock()
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.add(d.SQL)
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (l *statementLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.add(d.SQL)
}

func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (l *statementLog) reset() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.sql
	l.sql = nil
	return out
}

// sequenceCall matches the sequence functions that pin an RDS Proxy session.
var sequenceCall = regexp.MustCompile(`(?i)\b(nextval|setval|currval|lastval)\s*\(`)

// TestCreateCallsNoSequenceFunction creates researches through the API,
// with and without an Idempotency-Key, on a pool in RDS Proxy's exec mode
// whose statements are logged: no statement of the project's own calls a
// sequence function. River's job insert does (JobInsertFastMany), which is
// why the API releases its connections after each write.
func TestCreateCallsNoSequenceFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, _, seed := lambdatest.SeededDB(t)
	log := &statementLog{}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	pc.ConnConfig.Tracer = log
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(httpapi.Deps{Service: agent})

	for _, key := range []string{"", "create-once-1"} {
		log.reset()
		req := httptest.NewRequest(http.MethodPost, "/v1/gb/research", strings.NewReader(`{"topic":"How does sync.Once work?"}`))
		req.Header.Set("Authorization", "Bearer "+seed.Key)
		if key != "" {
			req.Header.Set(httpapi.IdempotencyKeyHeader, key)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if rec.Code != http.StatusAccepted {
			t.Fatalf("POST (key %q): %d %s", key, rec.Code, rec.Body)
		}
		sql := log.reset()
		inserted, riverInserts := false, 0
		for _, s := range sql {
			if strings.Contains(s, "INSERT INTO gb_agent_research_runs") {
				inserted = true
			}
			if !sequenceCall.MatchString(s) {
				continue
			}
			if strings.Contains(s, "river_job") {
				riverInserts++
				continue
			}
			t.Errorf("key %q: a statement of the project's own calls a sequence function:\n%s", key, s)
		}
		if !inserted || riverInserts != 1 {
			t.Fatalf("key %q: the log misses the run insert (%v) or has %d River inserts, want 1:\n%s",
				key, inserted, riverInserts, strings.Join(sql, "\n---\n"))
		}
	}
	// The root run is its own root, set by the database.
	var bad int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM gb_agent_research_runs WHERE parent_id IS NULL AND root_id <> id").Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("%d root runs whose root_id is not their id (%v)", bad, err)
	}
}
