// Package kb is the knowledge base of research agents: named datasets of
// documents in Postgres, searched with full-text search (ranked, with
// snippets), read one at a time; and the notes agents remember, which
// belong to their research tree and are searched with its dataset in one
// ranking (notes.go).
//
// Each document is kept in passages too (passages.go): its sections, cut
// at headings, Go declarations and paragraph ends, each with its offset
// in the body and its heading. Search ranks the passages and gives each
// document hit its best passage (search.go); Find jumps to the passages
// of a document that hold a phrase or name a symbol (find.go). Loading
// (load.go) skips documents whose content did not change. Go packages
// are rendered with go/doc and go/printer (godoc.go); PDFs, Office files
// and the other documents of a folder are read by jobs/doctext, their
// pages marked in the body, so that a passage is cited to its page
// (PageSpan).
//
// It may import jobs/doctext only.
package kb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what kb needs of a pool or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Document is one text of a dataset.
type Document struct {
	ID     int64  `json:"id"`
	Source string `json:"source"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	// Root is the directory the document was found under (FromPaths),
	// "" for a document of its own; loading a root again removes its
	// documents that are gone.
	Root string `json:"-"`
	// Passages are the document's passages when its maker knows them (a
	// Go package's declarations); when nil, Load splits the body (Split).
	Passages []Passage `json:"-"`
	// FileHash is the hash of the bytes of the file the document was read
	// from (FromPathsWith), kept to read only changed files next time.
	FileHash string `json:"-"`
	// Unchanged marks a document whose file has the hash stored
	// (FromPathsWith with Known): it was not read, and Sync keeps it.
	Unchanged bool `json:"-"`
}

// Hit is one search result: a document and its best passage.
type Hit struct {
	ID      int64  `json:"id"`
	Source  string `json:"source"`
	Title   string `json:"title"`
	Snippet string `json:"snippet"`
	// Offset (in characters of the body) and Heading are of the best
	// passage, the one the snippet is from: read from Offset to read it.
	Offset  int    `json:"offset"`
	Heading string `json:"heading"`
	// Symbols are the names the best passage declares, if any.
	Symbols []string `json:"symbols,omitempty"`
	// Every is set when the document has every term of the query (in
	// its passages together); such documents come first.
	Every bool `json:"every"`
	// Passages is how many of the document's passages match.
	Passages int     `json:"passages"`
	Rank     float64 `json:"rank"`
}

// ErrNotFound is returned by Read for a document that is not in the dataset.
var ErrNotFound = errors.New("document not found")

// Limits of what agents can ask for and store. Lengths are in characters
// (runes), but MaxDocBodyLen, which is in bytes.
const (
	MaxQueryLen   = 500
	MaxQueryTerms = 32
	MaxResults    = 10
	MaxTitleLen   = 200
	MaxNoteLen    = 10000
	MaxReadLen    = 12000
	MaxDocBodyLen = 400000
)

// ErrBadQuery marks a query that Search refuses; its message says why, in
// words a model can act on.
var ErrBadQuery = errors.New("bad query")

// queryError is a refused query: its message is the reason alone.
type queryError struct{ msg string }

func (e *queryError) Error() string        { return e.msg }
func (e *queryError) Is(target error) bool { return target == ErrBadQuery }

// CheckQuery says why Search would refuse query, or returns nil: it must
// be 1 to MaxQueryLen characters of valid UTF-8 with no NUL, and have at
// most MaxQueryTerms words. The error matches ErrBadQuery.
func CheckQuery(query string) error {
	n := utf8.RuneCountInString(query)
	switch {
	case !utf8.ValidString(query):
		return &queryError{"query must be valid UTF-8"}
	case strings.IndexByte(query, 0) >= 0:
		return &queryError{"query must not contain NUL characters"}
	case strings.TrimSpace(query) == "":
		return &queryError{fmt.Sprintf("query must be 1 to %d characters", MaxQueryLen)}
	case n > MaxQueryLen:
		return &queryError{fmt.Sprintf("query is %d characters; at most %d are allowed", n, MaxQueryLen)}
	}
	if w := len(words(query)); w > MaxQueryTerms {
		return &queryError{fmt.Sprintf("query has %d words; at most %d are allowed", w, MaxQueryTerms)}
	}
	return nil
}

// words splits a query into its runs of letters and digits, about as the
// text-search parser reads it.
func words(query string) []string {
	return strings.FieldsFunc(query, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// DatasetExists reports whether the named dataset exists.
func DatasetExists(ctx context.Context, db DB, name string) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM gb_kb_datasets WHERE name = $1)", name).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("error checking dataset: %w", err)
	}
	return ok, nil
}

// Datasets lists the names of all datasets.
func Datasets(ctx context.Context, db DB) ([]string, error) {
	rows, err := db.Query(ctx, "SELECT name FROM gb_kb_datasets ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("error listing datasets: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Read returns one document of a dataset, its body cut to MaxReadLen.
func Read(ctx context.Context, db DB, dataset string, id int64) (Document, error) {
	d, _, err := ReadAt(ctx, db, dataset, id, 0)
	return d, err
}

// ReadAt returns one document of a dataset with at most MaxReadLen
// characters of its body from offset (characters), and the length of the
// whole body in characters. It reads no note.
func ReadAt(ctx context.Context, db DB, dataset string, id int64, offset int) (Document, int, error) {
	return ReadIn(ctx, db, Scope{Dataset: dataset}, id, offset)
}

// ReadIn is ReadAt of a document of a scope: of its dataset, or a note
// of its tree.
func ReadIn(ctx context.Context, db DB, scope Scope, id int64, offset int) (Document, int, error) {
	var d Document
	var total int
	err := db.QueryRow(ctx, `SELECT id, source, title, substr(body, $4 + 1, $5), char_length(body)
		FROM gb_kb_documents d WHERE `+scopeSQL+` AND id = $3`, scope.Dataset, scope.Tree, id, max(offset, 0), MaxReadLen).
		Scan(&d.ID, &d.Source, &d.Title, &d.Body, &total)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, 0, ErrNotFound
	}
	if err != nil {
		return d, 0, fmt.Errorf("error reading document %d: %w", id, err)
	}
	return d, total, nil
}
