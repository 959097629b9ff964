package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// Kinds of a source.
const (
	// SourceFetch is a page a run fetched.
	SourceFetch = "fetch"
	// SourceResult is a search result a run was shown.
	SourceResult = "result"
	// SourceKB is a knowledge-base document a run read (migration 019).
	SourceKB = "kb"
)

// FetchCacheAgeDefault is how long a page one agent of a tree fetched is
// reused by the others instead of fetched again.
const FetchCacheAgeDefault = time.Hour

// maxCachedBody bounds the text of a page kept for the tree's cache.
const maxCachedBody = 1 << 20

// Source is one page a run fetched, one search result it was shown, or one
// knowledge-base document it read.
type Source struct {
	RunID        int64     `json:"run_id"`
	Step         int       `json:"step"`
	Kind         string    `json:"kind"`
	URL          string    `json:"url"`
	RequestedURL string    `json:"requested_url,omitempty"`
	Title        string    `json:"title"`
	Status       int       `json:"status"`
	Bytes        int64     `json:"bytes"`
	ContentType  string    `json:"content_type,omitempty"`
	Error        string    `json:"error,omitempty"`
	Cached       bool      `json:"cached"`
	At           time.Time `json:"at"`
	// body is the readable text of a fresh fetch, kept for the cache.
	body *string
}

// sourceRow is a source as recordStepSQL reads it.
type sourceRow struct {
	Kind         string  `json:"kind"`
	URL          string  `json:"url"`
	RequestedURL string  `json:"requested_url"`
	Title        string  `json:"title"`
	Status       int     `json:"status"`
	Bytes        int64   `json:"bytes"`
	ContentType  string  `json:"content_type"`
	Error        string  `json:"error"`
	Cached       bool    `json:"cached"`
	Body         *string `json:"body"`
}

// encodeSources encodes what a step read for recordStepSQL, as a JSON
// array, cleaned of what Postgres refuses and with bodies capped.
func encodeSources(sources []Source) (string, error) {
	rows := make([]sourceRow, len(sources))
	for i, s := range sources {
		var body *string
		if s.body != nil {
			b := llm.CleanText(truncateRunes(*s.body, maxCachedBody))
			body = &b
		}
		rows[i] = sourceRow{Kind: s.Kind, URL: llm.CleanText(s.URL), RequestedURL: llm.CleanText(s.RequestedURL), Title: llm.CleanText(s.Title),
			Status: s.Status, Bytes: s.Bytes, ContentType: llm.CleanText(s.ContentType), Error: llm.CleanText(s.Error), Cached: s.Cached,
			Body: body}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return "", fmt.Errorf("error encoding sources: %w", err)
	}
	return string(b), nil
}

// cachedPage returns the text of a page an agent of the tree fetched
// within age, or ok false.
func cachedPage(ctx context.Context, db DB, rootID int64, url string, age time.Duration) (Source, string, bool, error) {
	var s Source
	var body string
	err := db.QueryRow(ctx, `SELECT url, title, status, bytes, content_type, at, body FROM gb_sources
		WHERE root_id = $1 AND requested_url = $2 AND kind = 'fetch' AND body IS NOT NULL
		  AND at > now() - $3 * interval '1 millisecond'
		ORDER BY id DESC LIMIT 1`, rootID, url, age.Milliseconds()).
		Scan(&s.URL, &s.Title, &s.Status, &s.Bytes, &s.ContentType, &s.At, &body)
	if err == pgx.ErrNoRows {
		return s, "", false, nil
	}
	if err != nil {
		return s, "", false, fmt.Errorf("error reading the fetch cache: %w", err)
	}
	return s, body, true, nil
}

// kbSource is the source of a read of a knowledge-base document: the
// document's own source as its URL, its place in the knowledge base
// (kbDocRef) as the requested URL, and the text the read returned, which
// the citation check compares claims with.
func kbSource(dataset string, id int64, source, title, text string) Source {
	return Source{Kind: SourceKB, URL: source, RequestedURL: kbDocRef(dataset, id), Title: title,
		Bytes: int64(len(text)), body: &text}
}

// kbDocRef names a knowledge-base document: "kb:<dataset>:<id>".
func kbDocRef(dataset string, id int64) string {
	return fmt.Sprintf("kb:%s:%d", dataset, id)
}

// Sources lists what a run read, or with tree set what every agent of the
// run's tree read, oldest first.
func Sources(ctx context.Context, db DB, run *Run, tree bool) ([]Source, error) {
	col, id := "run_id", run.ID
	if tree {
		col, id = "root_id", run.RootID
	}
	rows, err := db.Query(ctx, `SELECT run_id, step, kind, url, requested_url, title, status, bytes, content_type,
			error, cached, at FROM gb_sources WHERE `+col+` = $1 ORDER BY id`, id)
	if err != nil {
		return nil, fmt.Errorf("error reading sources: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Source, error) {
		var s Source
		err := r.Scan(&s.RunID, &s.Step, &s.Kind, &s.URL, &s.RequestedURL, &s.Title, &s.Status, &s.Bytes,
			&s.ContentType, &s.Error, &s.Cached, &s.At)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading sources: %w", err)
	}
	return out, nil
}
