package bench

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestClassify checks whose statements the tracer says they are.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want Statement
	}{
		{"-- name: JobGetAvailable :many\nWITH locked_jobs AS (SELECT 1)", Statement{Kind: KindRiver, Text: "JobGetAvailable"}},
		{"  -- name: PGNotifyMany :exec\nSELECT 1", Statement{Kind: KindRiver, Text: "PGNotifyMany"}},
		{"begin", Statement{Kind: KindTx, Text: "begin"}},
		{"begin isolation level repeatable read", Statement{Kind: KindTx, Text: "begin isolation level repeatable read"}},
		{"COMMIT", Statement{Kind: KindTx, Text: "commit"}},
		{"rollback", Statement{Kind: KindTx, Text: "rollback"}},
		{"SELECT  1\n\tFROM x", Statement{Kind: KindGB, Text: "SELECT 1 FROM x"}},
	} {
		if got := classify(c.sql); got != c.want {
			t.Errorf("classify(%q) = %+v, want %+v", c.sql, got, c.want)
		}
	}
}

// TestWrites checks which statements count as writes, which commit on
// their own outside a transaction.
func TestWrites(t *testing.T) {
	for sql, want := range map[string]bool{
		"INSERT INTO gb_messages (to_id) VALUES ($1)":          true,
		"-- name: JobGetAvailable :many\nWITH x AS (UPDATE j)": true,
		"SELECT id FROM r WHERE id = $1 FOR UPDATE":            true,
		"SELECT pg_notify($1, '1')":                            true,
		"SELECT id, updated_at FROM gb_agent_research_runs":    false,
		"SELECT 1": false,
	} {
		if got := writes.MatchString(sql); got != want {
			t.Errorf("writes(%q) = %v, want %v", sql, got, want)
		}
	}
}

// TestTraceCounts checks the sums of a tracer's counts, a batch and a copy
// counted as one round trip each.
func TestTraceCounts(t *testing.T) {
	tr := NewTracer()
	before := tr.Snapshot()
	ctx := t.Context()
	for _, sql := range []string{"begin", "SELECT 1", "-- name: JobInsertFastMany :many\nINSERT", "commit"} {
		tr.TraceQueryStart(ctx, nil, pgx.TraceQueryStartData{SQL: sql})
	}
	b := &pgx.Batch{}
	b.Queue("-- name: JobSetStateIfRunningMany :many\nUPDATE")
	b.Queue("SELECT 2")
	tr.TraceBatchStart(ctx, nil, pgx.TraceBatchStartData{Batch: b})
	tr.TraceCopyFromStart(ctx, nil, pgx.TraceCopyFromStartData{TableName: pgx.Identifier{"river_job"}})
	c := tr.Snapshot().Sub(before)
	if c.RoundTrips() != 6 || c.Kind(KindRiver) != 3 || c.Kind(KindGB) != 1 || c.Kind(KindTx) != 2 || c.Commits() != 1 {
		t.Errorf("round trips %d, river %d, gb %d, tx %d, commits %d; want 6, 3, 1, 2, 1",
			c.RoundTrips(), c.Kind(KindRiver), c.Kind(KindGB), c.Kind(KindTx), c.Commits())
	}
	if top := c.Top(1); len(top) != 1 || top[0].Count != 1 {
		t.Errorf("top statement %+v", top)
	}
}

// TestTracerCachesWhatItKnows checks that a statement seen again is
// counted as when it was first seen, in and out of a batch.
func TestTracerCachesWhatItKnows(t *testing.T) {
	tr := NewTracer()
	ctx := t.Context()
	for range 3 {
		tr.TraceQueryStart(ctx, nil, pgx.TraceQueryStartData{SQL: "SELECT  1\n\tFROM x"})
		b := &pgx.Batch{}
		b.Queue("SELECT  1\n\tFROM x")
		tr.TraceBatchStart(ctx, nil, pgx.TraceBatchStartData{Batch: b})
	}
	c := tr.Snapshot()
	if c[Statement{Kind: KindGB, Text: "SELECT 1 FROM x"}] != 3 || c[Statement{Kind: KindGB, Text: "batch: SELECT 1 FROM x"}] != 3 {
		t.Errorf("counts %v", c)
	}
	if i := tr.info("INSERT INTO x VALUES (1)"); !i.writes || i.stmt.Kind != KindGB {
		t.Errorf("info of an insert: %+v", i)
	}
}
