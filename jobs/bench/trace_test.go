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

// TestBatchThatBegins checks how batches sent outside a transaction are
// counted: one that begins a transaction (pgx's Batch.BeginTx) is named by
// the statement after its BEGIN and is no commit whatever it writes; one
// that writes is a commit, and so is one that commits.
func TestBatchThatBegins(t *testing.T) {
	tr := NewTracer()
	queue := func(begin bool, sql ...string) []*pgx.QueuedQuery {
		b := &pgx.Batch{}
		if begin {
			b.BeginTx(pgx.TxOptions{})
		}
		for _, q := range sql {
			b.Queue(q)
		}
		return b.QueuedQueries
	}
	for _, c := range []struct {
		qs   []*pgx.QueuedQuery
		want Statement
	}{
		{queue(true, "SELECT id FROM r WHERE id = $1 FOR UPDATE", "UPDATE r SET n = 1"),
			Statement{Kind: KindGB, Text: "batch: begin; SELECT id FROM r WHERE id = $1 FOR UPDATE"}},
		{queue(false, "SELECT 1", "UPDATE r SET n = 2"), Statement{Kind: KindGB, Text: "batch: SELECT 1", Alone: true}},
		{queue(false, "SELECT 1", "SELECT 2"), Statement{Kind: KindGB, Text: "batch: SELECT 1"}},
		{queue(true, "UPDATE r SET n = 3", "commit"),
			Statement{Kind: KindGB, Text: "batch: begin; UPDATE r SET n = 3", Alone: true}},
	} {
		if got := tr.batch(c.qs, true); got != c.want {
			t.Errorf("batch %d statements: %+v, want %+v", len(c.qs), got, c.want)
		}
	}
	if got := tr.batch(queue(false, "UPDATE r SET n = 4"), false); got.Alone {
		t.Errorf("a write in a transaction counted as a commit: %+v", got)
	}
}
