package kb

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// HowSearchMatches says, for agents, how Search matches a query.
const HowSearchMatches = `Matches documents with any of the words or "quoted phrases" (by English stem; ` +
	`-word or -"phrase" excludes); those with every term come first, then by their best passage.`

// Search finds the documents of a dataset that match any of the terms of
// query (words and "quoted phrases"; -term excludes), as
// HowSearchMatches says, best first. Passages are ranked, and a document
// is ranked by its best passage, a little more for each other passage
// that matches, after the documents that have every term. A query
// CheckQuery refuses is an error matching ErrBadQuery; a query of stop
// words or punctuation alone matches nothing. It sees no notes.
func Search(ctx context.Context, db DB, dataset, query string, limit int) ([]Hit, error) {
	return SearchIn(ctx, db, Scope{Dataset: dataset}, query, limit)
}

// SearchIn is Search over a scope: the documents of its dataset and the
// notes of its tree, in one query and one ranking.
func SearchIn(ctx context.Context, db DB, scope Scope, query string, limit int) ([]Hit, error) {
	dataset := scope.Dataset
	if err := CheckQuery(query); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > MaxResults {
		limit = MaxResults
	}
	terms, excluded := anyTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	rows, err := db.Query(ctx, searchSQL, dataset, scope.Tree, query, strings.Join(terms, " or "), strings.Join(excluded, " "), limit)
	if err != nil {
		return nil, fmt.Errorf("error searching dataset %q: %w", dataset, err)
	}
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hit, error) {
		var h Hit
		var symbols string
		err := r.Scan(&h.ID, &h.Source, &h.Title, &h.Offset, &h.Heading, &symbols, &h.Every, &h.Passages, &h.Rank, &h.Snippet)
		h.Symbols = strings.Fields(symbols)
		h.Snippet = strings.Join(strings.Fields(h.Snippet), " ") // one line: a hit's text never looks like the next hit
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading search results: %w", err)
	}
	return hits, nil
}

// searchSQL ranks the passages of the documents of a scope (dataset $1,
// tree $2, scopeIDsSQL) that match any term ($4, the terms joined by "or") in the
// documents that have none of the excluded terms ($5), then the
// documents: those that have every term ($3, the query) first, then by
// their best passage's rank, raised by a tenth of its log for each other
// matching passage and by a half when that passage has every term itself. The snippet is of the best passage alone.
const searchSQL = `
WITH q AS (
	SELECT websearch_to_tsquery('english', $3) AS every_q,
	       websearch_to_tsquery('english', $4) AS any_q,
	       websearch_to_tsquery('english', $5) AS not_q
),
scope AS (` + scopeIDsSQL + `),
m AS (
	SELECT p.document_id, p.ord, p.start_char, p.char_len, p.heading, p.symbols,
	       ts_rank_cd(p.tsv, q.any_q) AS r, p.tsv @@ q.every_q AS every_p
	FROM scope s JOIN gb_kb_passages p ON p.document_id = s.id, q
	WHERE p.tsv @@ q.any_q
),
best AS (
	SELECT DISTINCT ON (document_id) *, count(*) OVER (PARTITION BY document_id) AS n
	FROM m
	ORDER BY document_id, every_p DESC, r DESC, ord
),
ranked AS (
	SELECT d.id, d.source, d.title, b.start_char, b.char_len, b.heading, b.symbols, b.n,
	       d.tsv @@ q.every_q AS every,
	       b.r * (1 + 0.5 * b.every_p::int) * (1 + 0.1 * ln(b.n)) AS score
	FROM best b JOIN gb_kb_documents d ON d.id = b.document_id, q
	WHERE numnode(q.not_q) = 0 OR d.tsv @@ q.not_q
	ORDER BY every DESC, score DESC, d.id
	LIMIT $6
)
SELECT r.id, r.source, r.title, r.start_char, r.heading, r.symbols, r.every, r.n, r.score,
       ts_headline('english', substr(d.body, r.start_char + 1, r.char_len), q.any_q,
                   'MaxFragments=2, MinWords=8, MaxWords=30, StartSel="", StopSel="", FragmentDelimiter=" … "')
FROM ranked r JOIN gb_kb_documents d ON d.id = r.id, q
ORDER BY r.every DESC, r.score DESC, r.id`

// anyTerms are the distinct terms of a query, for a search that matches
// any of them: its words and "quoted phrases" (kept whole, quotes and
// all), and the terms it excludes (-word, -"phrase"). The word "or" is
// taken out. There are at most MaxQueryTerms of each.
func anyTerms(query string) (terms, excluded []string) {
	seen := map[string]bool{}
	for _, t := range queryTerms(query) {
		key := strings.ToLower(t)
		bare := strings.Trim(t, `-"`)
		if strings.TrimSpace(bare) == "" || strings.EqualFold(bare, "or") || seen[key] {
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

// queryTerms cuts a query at spaces into words and quoted phrases (a
// phrase runs to its closing quote, or to the end); a phrase's quotes are
// kept, and a - before it too.
func queryTerms(query string) []string {
	var out []string
	for rest := strings.TrimSpace(query); rest != ""; rest = strings.TrimSpace(rest) {
		neg := strings.HasPrefix(rest, "-")
		body := strings.TrimPrefix(rest, "-")
		if strings.HasPrefix(body, `"`) {
			end := strings.IndexByte(body[1:], '"')
			if end < 0 {
				end = len(body) - 1
			}
			phrase := `"` + strings.TrimSpace(body[1:end+1]) + `"`
			if neg {
				phrase = "-" + phrase
			}
			out = append(out, phrase)
			rest = body[min(end+2, len(body)):]
			continue
		}
		word, after, _ := strings.Cut(rest, " ")
		if i := strings.IndexByte(word, '"'); i > 0 {
			word, after = word[:i], word[i:]+" "+after
		}
		out = append(out, word)
		rest = after
	}
	return out
}
