// Package kb is the knowledge base of research agents: named datasets of
// documents in Postgres, searched with full-text search (ranked, with
// snippets), read one at a time, and grown by the notes agents remember.
//
// It may import nothing of the project.
package kb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
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
}

// Hit is one search result.
type Hit struct {
	ID      int64   `json:"id"`
	Source  string  `json:"source"`
	Title   string  `json:"title"`
	Snippet string  `json:"snippet"`
	Rank    float64 `json:"rank"`
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

// Search finds the documents of a dataset that match query (web-search
// syntax), best first. When no document has every term, it searches once
// more, for any of the query's distinct terms (and still none of the terms
// it excludes with -term). A query CheckQuery refuses
// is an error matching ErrBadQuery; a query of stop words or punctuation
// alone matches nothing.
func Search(ctx context.Context, db DB, dataset, query string, limit int) ([]Hit, error) {
	if err := CheckQuery(query); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > MaxResults {
		limit = MaxResults
	}
	hits, err := search(ctx, db, dataset, query, "", limit)
	if len(hits) > 0 || err != nil {
		return hits, err
	}
	terms, excluded := anyTerms(query)
	if len(terms) < 2 {
		return nil, nil
	}
	return search(ctx, db, dataset, strings.Join(terms, " or "), strings.Join(excluded, " "), limit)
}

// anyTerms are the distinct terms of a query, for a search that matches
// any of them, and the terms it excludes (-term), which that search still
// excludes. Web-search syntax (quotes, the word "or") is taken out. There
// are at most MaxQueryTerms of each.
func anyTerms(query string) (terms, excluded []string) {
	seen := map[string]bool{}
	for _, f := range strings.Fields(query) {
		t := strings.ReplaceAll(f, `"`, "")
		key := strings.ToLower(t)
		if strings.Trim(t, "-") == "" || key == "or" || seen[key] {
			continue
		}
		seen[key] = true
		switch {
		case strings.HasPrefix(t, "-") && len(excluded) < MaxQueryTerms:
			excluded = append(excluded, t)
		case !strings.HasPrefix(t, "-") && len(terms) < MaxQueryTerms:
			terms = append(terms, t)
		}
	}
	return terms, excluded
}

// search runs one full-text query (web-search syntax) for the documents
// that match query and none of exclude.
func search(ctx context.Context, db DB, dataset, query, exclude string, limit int) ([]Hit, error) {
	rows, err := db.Query(ctx, `
		WITH q AS (SELECT websearch_to_tsquery('english', $2) && websearch_to_tsquery('english', $4) AS q)
		SELECT d.id, d.source, d.title,
		       ts_headline('english', left(d.body, 8000), q.q,
		                   'MaxFragments=2, MinWords=8, MaxWords=30, StartSel="", StopSel="", FragmentDelimiter=" … "'),
		       ts_rank_cd(d.tsv, q.q) AS rank
		FROM gb_kb_documents d, q
		WHERE d.dataset = $1 AND d.tsv @@ q.q
		ORDER BY rank DESC, d.id
		LIMIT $3`, dataset, query, limit, exclude)
	if err != nil {
		return nil, fmt.Errorf("error searching dataset %q: %w", dataset, err)
	}
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hit, error) {
		var h Hit
		err := r.Scan(&h.ID, &h.Source, &h.Title, &h.Snippet, &h.Rank)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading search results: %w", err)
	}
	return hits, nil
}

// Read returns one document of a dataset, its body cut to MaxReadLen.
func Read(ctx context.Context, db DB, dataset string, id int64) (Document, error) {
	d, _, err := ReadAt(ctx, db, dataset, id, 0)
	return d, err
}

// ReadAt returns one document of a dataset with at most MaxReadLen
// characters of its body from offset (characters), and the length of the
// whole body in characters.
func ReadAt(ctx context.Context, db DB, dataset string, id int64, offset int) (Document, int, error) {
	var d Document
	var total int
	err := db.QueryRow(ctx, `SELECT id, source, title, substr(body, $3 + 1, $4), char_length(body)
		FROM gb_kb_documents WHERE dataset = $1 AND id = $2`, dataset, id, max(offset, 0), MaxReadLen).
		Scan(&d.ID, &d.Source, &d.Title, &d.Body, &total)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, 0, ErrNotFound
	}
	if err != nil {
		return d, 0, fmt.Errorf("error reading document %d: %w", id, err)
	}
	return d, total, nil
}

// Remember stores an agent's note in the dataset, where its siblings and
// later searches find it. It returns the note's document id.
func Remember(ctx context.Context, db DB, dataset string, runID int64, title, text string) (int64, error) {
	source := fmt.Sprintf("note:run-%d:%d", runID, time.Now().UnixNano())
	var id int64
	err := db.QueryRow(ctx, `INSERT INTO gb_kb_documents (dataset, source, title, body, run_id)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, dataset, source, title, text, runID).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("error storing note: %w", err)
	}
	return id, nil
}

// Load creates the dataset if needed and upserts documents by source. It
// returns how many documents it wrote.
func Load(ctx context.Context, db DB, dataset string, docs []Document) (int, error) {
	if _, err := db.Exec(ctx, "INSERT INTO gb_kb_datasets (name) VALUES ($1) ON CONFLICT DO NOTHING", dataset); err != nil {
		return 0, fmt.Errorf("error creating dataset %q (names are lowercase letters, digits, - and _): %w", dataset, err)
	}
	n := 0
	for _, d := range docs {
		body := d.Body
		if len(body) > MaxDocBodyLen {
			body = body[:MaxDocBodyLen]
		}
		body = strings.ToValidUTF8(strings.ReplaceAll(body, "\x00", ""), "")
		_, err := db.Exec(ctx, `INSERT INTO gb_kb_documents (dataset, source, title, body)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (dataset, source) DO UPDATE SET title = excluded.title, body = excluded.body`,
			dataset, d.Source, d.Title, body)
		if err != nil {
			return n, fmt.Errorf("error loading %s: %w", d.Source, err)
		}
		n++
	}
	return n, nil
}
