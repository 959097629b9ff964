package jobs

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/cite"
)

// treeDocuments is what every agent of a tree read or was shown, for the
// citation check: the tree's sources (a fetched page with the text it got,
// a search result with none; any other kind with a body counts as read),
// and the knowledge-base documents its read and search tools returned, as
// their results in the tree's conversations show them.
func treeDocuments(ctx context.Context, db DB, rootID int64) ([]cite.Document, error) {
	rows, err := db.Query(ctx, `SELECT kind, url, requested_url, title, body FROM gb_sources
		WHERE root_id = $1 ORDER BY id`, rootID)
	if err != nil {
		return nil, fmt.Errorf("error reading the sources of tree %d: %w", rootID, err)
	}
	docs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (cite.Document, error) {
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
	if err != nil {
		return nil, fmt.Errorf("error reading the sources of tree %d: %w", rootID, err)
	}
	rows, err = db.Query(ctx, `SELECT m->>'name', coalesce(m->>'content', '')
		FROM gb_agent_research_runs r
		JOIN gb_agent_research_steps s ON s.run_id = r.id
		CROSS JOIN LATERAL jsonb_array_elements(s.messages) AS m
		WHERE r.root_id = $1 AND m->>'role' = 'tool' AND m->>'name' IN ($2, $3)
		ORDER BY s.run_id, s.step`, rootID, toolRead, toolSearch)
	if err != nil {
		return nil, fmt.Errorf("error reading the knowledge-base reads of tree %d: %w", rootID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, content string
		if err := rows.Scan(&name, &content); err != nil {
			return nil, fmt.Errorf("error reading the knowledge-base reads of tree %d: %w", rootID, err)
		}
		if name == toolRead {
			if d, ok := kbRead(content); ok {
				docs = append(docs, d)
			}
		} else {
			docs = append(docs, kbShown(content)...)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading the knowledge-base reads of tree %d: %w", rootID, err)
	}
	return docs, nil
}

// kbHeaderRE is the line that heads a knowledge-base document in the
// results of read and search: "[id N] title (source)".
var kbHeaderRE = regexp.MustCompile(`(?m)^\[id (\d+)\] (.*) \(([^()\n]*)\)$`)

// kbRef is the reference of a knowledge-base document by its id, which a
// report may cite when it has no source.
func kbRef(id string) string { return "kb:" + id }

// kbRead is the document a read result gave: its text from the line after
// its header to the paging note, if any. Lines of an untrusted block's
// markers are left out.
func kbRead(content string) (cite.Document, bool) {
	m := kbHeaderRE.FindStringSubmatchIndex(content)
	if m == nil {
		return cite.Document{}, false
	}
	id, title, source := content[m[2]:m[3]], content[m[4]:m[5]], content[m[6]:m[7]]
	body := content[m[1]:]
	if i := strings.LastIndex(body, "\n\n[characters "); i >= 0 {
		body = body[:i]
	}
	return cite.Document{Refs: []string{source, kbRef(id)}, Title: title, Text: dropMarkers(body), Read: true}, true
}

// kbShown are the documents a search result listed: shown, not read.
func kbShown(content string) []cite.Document {
	var out []cite.Document
	for _, m := range kbHeaderRE.FindAllStringSubmatch(content, -1) {
		if _, err := strconv.Atoi(m[1]); err != nil {
			continue
		}
		out = append(out, cite.Document{Refs: []string{m[3], kbRef(m[1])}, Title: m[2]})
	}
	return out
}

// dropMarkers removes the lines of untrusted blocks' markers from a text.
func dropMarkers(text string) string {
	lines := strings.Split(text, "\n")
	out := lines[:0]
	for _, l := range lines {
		if strings.HasPrefix(l, "<<<") && strings.HasSuffix(l, ">>>") {
			continue
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
