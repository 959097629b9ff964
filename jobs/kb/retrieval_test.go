package kb_test

import (
	"context"
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/kb"
)

// The retrieval table (docs/retrieval.md): natural queries of a research
// on graceful HTTP shutdown, contexts, timeouts and signals over the
// godoc dataset, each with the document it should find and a phrase of
// the passage it should reach. The table is measured through an engine
// (retrieval_engine_test.go), so that the same queries and measures run
// against the code of another commit with that commit's engine.

// retrievalQuery is one query of the table: the document it should find
// (its source), a phrase of the passage it should reach, and what a model
// would give read's find to get there.
type retrievalQuery struct {
	query, source, phrase, find string
}

var retrievalQueries = []retrievalQuery{
	{"Shutdown gracefully shuts down the server without interrupting any active connections", "net/http",
		"Shutdown gracefully shuts down the server without interrupting any active connections", "Shutdown"},
	{"BaseContext", "net/http", "BaseContext optionally specifies a function that returns the base context", "BaseContext"},
	{"ErrServerClosed", "net/http", `var ErrServerClosed = errors.New("http: Server closed")`, "ErrServerClosed"},
	{"context canceled", "context", `var Canceled = errors.New("context canceled")`, "Canceled"},
	{"ReadHeaderTimeout", "net/http", "ReadHeaderTimeout is the amount of time allowed to read request headers", "ReadHeaderTimeout"},
	{"RegisterOnShutdown", "net/http", "RegisterOnShutdown registers a function to call on Server.Shutdown", "RegisterOnShutdown"},
	{"graceful shutdown of an HTTP server on interrupt signal", "net/http", "signal.Notify(sigint, os.Interrupt)", "os.Interrupt"},
	{"signal.NotifyContext", "os/signal", "NotifyContext returns a copy of the parent context that is marked done", "NotifyContext"},
	{"relay incoming signals to a channel", "os/signal", "Notify causes package signal to relay incoming signals to c", "Notify"},
	{"Context.Done", "context", "Done returns a channel that's closed when work done on behalf of this context should be canceled", "Done"},
	{"context deadline exceeded error", "context", "DeadlineExceeded is the error returned by Context.Err when the context is canceled", "DeadlineExceeded"},
	{"WithTimeout cancel function release resources", "context", "WithTimeout returns WithDeadline(parent, time.Now().Add(timeout))", "WithTimeout"},
	{"WithCancelCause", "context", "WithCancelCause behaves like WithCancel but returns a CancelCauseFunc", "WithCancelCause"},
	{"call a function after a context is canceled", "context", "AfterFunc arranges to call f in its own goroutine after ctx is canceled", "AfterFunc"},
	{"IdleTimeout keep-alives", "net/http", "IdleTimeout is the maximum amount of time to wait for the next request when keep-alives are enabled", "IdleTimeout"},
	{"TimeoutHandler time limit", "net/http", "TimeoutHandler returns a Handler that runs h with the given time limit", "TimeoutHandler"},
	{"Close immediately closes all active listeners", "net/http", "Close immediately closes all active net.Listeners", "Close"},
	{"SetKeepAlivesEnabled", "net/http", "SetKeepAlivesEnabled controls whether HTTP keep-alives are enabled", "SetKeepAlivesEnabled"},
	{"time.AfterFunc timer goroutine", "time", "AfterFunc waits for the duration to elapse and then calls f in its own goroutine", "AfterFunc"},
	{"WaitGroup wait for goroutines to finish", "sync", "A WaitGroup is a counting semaphore typically used to wait for a group of goroutines or tasks to finish", "WaitGroup"},
	{"cancel a database query with a context", "database/sql", "QueryContext executes a query that returns rows, typically a SELECT", "QueryContext"},
	{"ListenConfig Listen context", "net", "Listen announces on the local network address", "Listen"},
}

// retrievalPackages are the packages the table loads by default (with
// their subpackages): the research's own, as FromPaths reads them.
var retrievalPackages = []string{"net", "context", "os", "sync", "time", "io", "errors", "database/sql", "encoding/json"}

// nearChars is how near the start of a read a phrase is in its first
// passage (kb.MaxPassageLen, spelled here so the table builds against the
// code before passages too).
const nearChars = 1500

// hitView is a search hit as the table sees it: the document and the
// offset a model reads from to reach it.
type hitView struct {
	id     int64
	source string
	offset int
}

// findPlace is a place one find call leads to: the start of the text it
// reads or of a passage it lists.
type findPlace struct {
	offset int
}

// retrievalRow is one query's measure.
type retrievalRow struct {
	q       retrievalQuery
	results int
	rank    int  // of the expected document, 1-based; 0 when not found
	byHit   int  // characters from the hit's read to the phrase; -1 when not in that read
	byFind  bool // one find call reaches a passage with the phrase
}

func (r retrievalRow) top3() bool    { return r.rank >= 1 && r.rank <= 3 }
func (r retrievalRow) reached() bool { return r.top3() && (r.byHit >= 0 || r.byFind) }

// TestRetrievalTable measures the query set over the godoc dataset: the
// packages of retrievalPackages, or with GB_RETRIEVAL=std the whole
// standard library as `gb demo` loads it. With -v it prints the table.
func TestRetrievalTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	src := filepath.Join(build.Default.GOROOT, "src")
	paths := []string{src}
	if os.Getenv("GB_RETRIEVAL") != "std" {
		paths = paths[:0]
		for _, p := range retrievalPackages {
			paths = append(paths, filepath.Join(src, filepath.FromSlash(p)))
		}
	}
	docs, err := kb.FromPaths(paths)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Load(ctx, pool, "godoc", docs); err != nil {
		t.Fatal(err)
	}
	e := newEngine(pool, "godoc")
	var rows []retrievalRow
	for _, q := range retrievalQueries {
		rows = append(rows, measure(t, ctx, e, q))
	}
	table := retrievalTable(rows, len(docs))
	if testing.Verbose() {
		fmt.Print(table)
	}
	top3, reached := 0, 0
	for _, r := range rows {
		if r.top3() {
			top3++
		}
		if r.reached() {
			reached++
		}
	}
	if min := len(rows) * 9 / 10; top3 < min || reached < min {
		t.Errorf("%d of %d queries have their document in the top 3 and %d reach their passage; want at least %d:\n%s",
			top3, len(rows), reached, min, table)
	}
}

// measure runs one query: a search, the read its expected document's hit
// leads to, and one find in that document.
func measure(t *testing.T, ctx context.Context, e engine, q retrievalQuery) retrievalRow {
	t.Helper()
	row := retrievalRow{q: q, byHit: -1}
	hits, err := e.search(ctx, q.query)
	if err != nil {
		t.Fatalf("%q: %v", q.query, err)
	}
	row.results = len(hits)
	want := "https://pkg.go.dev/" + q.source
	for i, h := range hits {
		if h.source != want {
			continue
		}
		row.rank = i + 1
		row.byHit = phraseAt(t, ctx, e, h.id, h.offset, q.phrase)
		places, err := e.find(ctx, h.id, q.find)
		if err != nil {
			t.Fatalf("%q: find %q: %v", q.query, q.find, err)
		}
		for _, p := range places {
			if n := phraseAt(t, ctx, e, h.id, p.offset, q.phrase); n >= 0 && n < nearChars {
				row.byFind = true
			}
		}
		break
	}
	return row
}

// phraseAt is how far into the read from offset the phrase is (white
// space and the // of comments in code aside), or -1 when that read does
// not hold it.
func phraseAt(t *testing.T, ctx context.Context, e engine, id int64, offset int, phrase string) int {
	t.Helper()
	d, _, err := kb.ReadAt(ctx, e.db(), "godoc", id, offset)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Join(slices.DeleteFunc(strings.Fields(d.Body), func(w string) bool { return w == "//" }), " ")
	i := strings.Index(body, phrase)
	if i < 0 {
		return -1
	}
	return len([]rune(body[:i]))
}

// retrievalTable is the table in Markdown, with its totals.
func retrievalTable(rows []retrievalRow, docs int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d documents loaded.\n\n", docs)
	b.WriteString("| # | query | expected | results | rank | phrase from the hit's read | one find (`find`) | reached |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	top3, hit, near, find, reached := 0, 0, 0, 0, 0
	for i, r := range rows {
		rank, at, f, ok := "–", "not in the read", "no", "no"
		if r.rank > 0 {
			rank = fmt.Sprint(r.rank)
		}
		if r.byHit >= 0 {
			at = fmt.Sprintf("at +%d", r.byHit)
			hit++
			if r.byHit < nearChars {
				near++
			}
		}
		if r.byFind {
			f = "yes"
			find++
		}
		if r.top3() {
			top3++
		}
		if r.reached() {
			ok = "yes"
			reached++
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %s | %s | %s (`%s`) | %s |\n", i+1, r.q.query, r.q.source, r.results, rank, at, f, r.q.find, ok)
	}
	fmt.Fprintf(&b, "\nExpected document in the top 3: %d of %d; phrase in the read the hit leads to: %d (in its first %d characters: %d); "+
		"reached by one find: %d; passage reached: %d of %d.\n", top3, len(rows), hit, nearChars, near, find, reached, len(rows))
	return b.String()
}
