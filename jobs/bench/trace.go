package bench

import (
	"cmp"
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Kinds of statement the Tracer tells apart.
const (
	// KindRiver is a statement of River's own (its sqlc queries start with
	// a "-- name: " comment).
	KindRiver = "river"
	// KindGB is any other statement: gb's, or a benchmark worker's.
	KindGB = "gb"
	// KindTx is begin, commit, rollback and savepoints.
	KindTx = "tx"
)

// Tracer counts the round trips of the connections it is installed on
// (pgx's QueryTracer, BatchTracer and CopyFromTracer): a query, an Exec
// (begin and commit included), a batch and a CopyFrom are one round trip
// each. It tells River's statements from the others by River's "-- name: "
// comment, and counts commits: COMMIT statements, and writes sent outside
// a transaction, which Postgres commits on their own. It is safe for
// concurrent use.
type Tracer struct {
	mu    sync.Mutex
	stmts map[Statement]int64
	// known caches what classify and writes say of each SQL text, which
	// the statements of gb and River repeat: classifying them anew each
	// time was a tenth of the bench's own CPU. At most maxKnown texts are
	// kept.
	known  sync.Map // string -> sqlInfo
	nKnown atomic.Int64
}

// sqlInfo is what the Tracer knows of one SQL text.
type sqlInfo struct {
	stmt   Statement // Alone unset
	batch  string    // the Text of a batch it begins
	writes bool      // it may write (writes)
}

// maxKnown bounds the SQL texts a Tracer caches: a statement built with
// its values in its text is classified anew each time past it.
const maxKnown = 4096

// info is what classify and writes say of sql, from the cache when sql was
// seen before.
func (t *Tracer) info(sql string) sqlInfo {
	if v, ok := t.known.Load(sql); ok {
		return v.(sqlInfo)
	}
	i := sqlInfo{stmt: classify(sql), writes: writes.MatchString(sql)}
	i.batch = "batch: " + i.stmt.Text
	if t.nKnown.Load() < maxKnown {
		if _, loaded := t.known.LoadOrStore(sql, i); !loaded {
			t.nKnown.Add(1)
		}
	}
	return i
}

// Statement is one kind of statement as the Tracer counts it.
type Statement struct {
	// Kind is KindRiver, KindGB or KindTx.
	Kind string
	// Text is River's query name, or the statement on one line, cut.
	Text string
	// Alone is true for a statement (or batch) that writes, sent outside
	// a transaction: Postgres commits it on its own.
	Alone bool
}

// writes matches the SQL of a statement that may write: it commits like a
// transaction when it runs outside one.
var writes = regexp.MustCompile(`(?i)\b(insert\s+into|update|delete\s+from|merge\s+into|pg_notify|nextval|setval)\b`)

// alone says whether conn is outside a transaction, so that a statement
// that writes (i.writes) commits on its own.
func alone(conn *pgx.Conn, i sqlInfo) bool {
	return conn != nil && conn.PgConn().TxStatus() == 'I' && i.writes
}

// NewTracer returns a Tracer with nothing counted.
func NewTracer() *Tracer { return &Tracer{stmts: map[Statement]int64{}} }

// Install makes cc's connection report to t; it fits db.PoolConfig's
// BeforeConnect.
func (t *Tracer) Install(_ context.Context, cc *pgx.ConnConfig) error {
	cc.Tracer = t
	return nil
}

func (t *Tracer) count(s Statement) {
	t.mu.Lock()
	t.stmts[s]++
	t.mu.Unlock()
}

// TraceQueryStart counts a query or an Exec.
func (t *Tracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	i := t.info(d.SQL)
	s := i.stmt
	s.Alone = s.Kind != KindTx && alone(conn, i)
	t.count(s)
	return ctx
}

// TraceQueryEnd does nothing.
func (t *Tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a batch, one round trip, by its first statement
// (by the one after it when it is a BEGIN: pgx's Batch.BeginTx). A write
// in it outside a transaction (an implicit one), or a COMMIT in it, makes
// it a commit; a BEGIN in it opens the transaction its later statements
// are in.
func (t *Tracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	s := Statement{Kind: KindGB, Text: "batch"}
	if d.Batch != nil && len(d.Batch.QueuedQueries) > 0 {
		s = t.batch(d.Batch.QueuedQueries, conn != nil && conn.PgConn().TxStatus() == 'I')
	}
	t.count(s)
	return ctx
}

// batch is how a batch of the statements qs is counted, sent on a
// connection outside a transaction (idle) or in one.
func (t *Tracer) batch(qs []*pgx.QueuedQuery, idle bool) Statement {
	first := t.info(qs[0].SQL)
	s := Statement{Kind: first.stmt.Kind, Text: first.batch}
	if txWord(first, "begin", "start") && len(qs) > 1 {
		next := t.info(qs[1].SQL).stmt
		s = Statement{Kind: next.Kind, Text: "batch: begin; " + next.Text}
	}
	for _, q := range qs {
		i := t.info(q.SQL)
		switch {
		case txWord(i, "begin", "start"):
			idle = false
		case txWord(i, "commit", "end", "rollback"):
			s.Alone = s.Alone || txWord(i, "commit", "end")
			idle = true
		default:
			s.Alone = s.Alone || idle && i.writes
		}
	}
	return s
}

// txWord says whether i is a transaction statement that starts with one
// of words.
func txWord(i sqlInfo, words ...string) bool {
	if i.stmt.Kind != KindTx {
		return false
	}
	first, _, _ := strings.Cut(i.stmt.Text, " ")
	return slices.Contains(words, first)
}

// TraceBatchQuery does nothing: the batch was counted at its start.
func (t *Tracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd does nothing.
func (t *Tracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TraceCopyFromStart counts a CopyFrom; one into a river_ table is River's.
func (t *Tracer) TraceCopyFromStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	table := d.TableName.Sanitize()
	kind := KindGB
	if n := len(d.TableName); n > 0 && strings.HasPrefix(d.TableName[n-1], "river_") {
		kind = KindRiver
	}
	t.count(Statement{Kind: kind, Text: "copy into " + table, Alone: conn != nil && conn.PgConn().TxStatus() == 'I'})
	return ctx
}

// TraceCopyFromEnd does nothing.
func (t *Tracer) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// classify names a statement and tells whose it is.
func classify(sql string) Statement {
	s := strings.TrimSpace(sql)
	if rest, ok := strings.CutPrefix(s, "-- name: "); ok {
		name, _, _ := strings.Cut(rest, " ")
		name, _, _ = strings.Cut(name, "\n")
		return Statement{Kind: KindRiver, Text: name}
	}
	first, _, _ := strings.Cut(s, " ")
	switch w := strings.ToLower(first); w {
	case "begin", "start", "commit", "end", "rollback", "savepoint", "release":
		return Statement{Kind: KindTx, Text: strings.ToLower(oneLine(s, 40))}
	}
	return Statement{Kind: KindGB, Text: oneLine(s, 100)}
}

// oneLine is s with its runs of white space made one space, cut to n bytes
// at a character boundary.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// TraceCounts is what a Tracer counted, by statement.
type TraceCounts map[Statement]int64

// Snapshot returns what t has counted so far.
func (t *Tracer) Snapshot() TraceCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(TraceCounts, len(t.stmts))
	for k, v := range t.stmts {
		out[k] = v
	}
	return out
}

// Sub is what c counted beyond before.
func (c TraceCounts) Sub(before TraceCounts) TraceCounts {
	out := TraceCounts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Kind is the round trips of one kind of statement.
func (c TraceCounts) Kind(kind string) int64 {
	var n int64
	for k, v := range c {
		if k.Kind == kind {
			n += v
		}
	}
	return n
}

// RoundTrips is every round trip counted.
func (c TraceCounts) RoundTrips() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// Commits counts the commits: COMMIT statements, and the statements and
// batches that write outside a transaction.
func (c TraceCounts) Commits() int64 {
	var n int64
	for k, v := range c {
		if k.Alone || k.Kind == KindTx && (strings.HasPrefix(k.Text, "commit") || k.Text == "end") {
			n += v
		}
	}
	return n
}

// StatementCount is one statement with how often it ran.
type StatementCount struct {
	Statement
	Count int64
}

// Top is the n statements that ran most often, the most first.
func (c TraceCounts) Top(n int) []StatementCount {
	out := make([]StatementCount, 0, len(c))
	for k, v := range c {
		out = append(out, StatementCount{k, v})
	}
	slices.SortFunc(out, func(a, b StatementCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Text, b.Text))
	})
	return out[:min(n, len(out))]
}
