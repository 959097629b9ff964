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

// Limits of what agents can ask for and store.
const (
	MaxQueryLen   = 500
	MaxResults    = 10
	MaxNoteLen    = 10000
	MaxReadLen    = 12000
	MaxDocBodyLen = 400000
)

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

// Search finds the documents of a dataset that match query, best first.
func Search(ctx context.Context, db DB, dataset, query string, limit int) ([]Hit, error) {
	if limit <= 0 || limit > MaxResults {
		limit = MaxResults
	}
	rows, err := db.Query(ctx, `
		WITH q AS (SELECT websearch_to_tsquery('english', $2) AS q)
		SELECT d.id, d.source, d.title,
		       ts_headline('english', left(d.body, 8000), q.q,
		                   'MaxFragments=2, MinWords=8, MaxWords=30, StartSel="", StopSel="", FragmentDelimiter=" … "'),
		       ts_rank_cd(d.tsv, q.q) AS rank
		FROM gb_kb_documents d, q
		WHERE d.dataset = $1 AND d.tsv @@ q.q
		ORDER BY rank DESC, d.id
		LIMIT $3`, dataset, query, limit)
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
	if len(hits) > 0 {
		return hits, nil
	}
	// No document has every term: fall back to any of them.
	terms := strings.Fields(query)
	if len(terms) < 2 {
		return nil, nil
	}
	return Search(ctx, db, dataset, strings.Join(terms, " or "), limit)
}

// Read returns one document of a dataset, its body cut to MaxReadLen.
func Read(ctx context.Context, db DB, dataset string, id int64) (Document, error) {
	var d Document
	err := db.QueryRow(ctx, `SELECT id, source, title, left(body, $3)
		FROM gb_kb_documents WHERE dataset = $1 AND id = $2`, dataset, id, MaxReadLen).
		Scan(&d.ID, &d.Source, &d.Title, &d.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, ErrNotFound
	}
	if err != nil {
		return d, fmt.Errorf("error reading document %d: %w", id, err)
	}
	return d, nil
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
