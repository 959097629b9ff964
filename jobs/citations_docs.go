package jobs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/cite"
)

// treeDocuments is what every agent of a tree read or was shown, for the
// citation check, from the tree's sources: a fetched page and a
// knowledge-base document read, with the text the agent got (migrations
// 006 and 019), and a search result, seen but not read. Any kind of source
// but a search result counts as read. One indexed query: it runs in the
// transaction that records a report, under the tree's lock.
func treeDocuments(ctx context.Context, db DB, rootID int64) ([]cite.Document, error) {
	rows, err := db.Query(ctx, treeDocumentsSQL, rootID)
	if err != nil {
		return nil, fmt.Errorf("error reading the sources of tree %d: %w", rootID, err)
	}
	docs, err := scanDocuments(rows)
	if err != nil {
		return nil, fmt.Errorf("error reading the sources of tree %d: %w", rootID, err)
	}
	return docs, nil
}

// treeDocumentsSQL reads the sources of a tree ($1, its root) by the
// tree's runs, so that both lookups use an index (gb_runs_root_idx,
// gb_sources_run_idx).
const treeDocumentsSQL = `SELECT s.kind, s.url, s.requested_url, s.title, s.body
	FROM gb_agent_research_runs r JOIN gb_sources s ON s.run_id = r.id
	WHERE r.root_id = $1 ORDER BY s.id`

// scanDocuments reads the rows of treeDocumentsSQL.
func scanDocuments(rows pgx.Rows) ([]cite.Document, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (cite.Document, error) {
		var kind, u, requested, title string
		var body *string
		if err := r.Scan(&kind, &u, &requested, &title, &body); err != nil {
			return cite.Document{}, err
		}
		d := cite.Document{Refs: []string{u, requested}, Title: title, Read: kind != SourceResult}
		if body != nil {
			d.Text = *body
		}
		return d, nil
	})
}
