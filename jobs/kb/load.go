package kb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// splitVersion names the way documents are cut into passages and indexed;
// it is part of every content hash, so changing it loads every document
// again.
const splitVersion = "kb-passages-3"

// LoadStats says what a load did: documents written, documents skipped
// because their content had not changed, and documents removed because
// their files were gone from a root loaded again.
type LoadStats struct {
	Loaded, Unchanged, Removed int
}

// String is the stats as `gb kb load` prints them.
func (s LoadStats) String() string {
	out := fmt.Sprintf("%d loaded, %d unchanged", s.Loaded, s.Unchanged)
	if s.Removed > 0 {
		out += fmt.Sprintf(", %d removed", s.Removed)
	}
	return out
}

// Load creates the dataset if needed and upserts documents by source
// (Sync). It returns how many of docs the dataset now holds as given:
// those written and those that had not changed.
func Load(ctx context.Context, db DB, dataset string, docs []Document) (int, error) {
	s, err := Sync(ctx, db, dataset, docs)
	return s.Loaded + s.Unchanged, err
}

// Sync creates the dataset if needed and stores docs by source, each with
// its passages, skipping a document whose content hash (of its title,
// body and passages) is the one stored. For each Root of docs, the
// dataset's documents of that root that docs no longer hold are removed:
// a root is only ever cleaned by loading that same root.
func Sync(ctx context.Context, db DB, dataset string, docs []Document) (LoadStats, error) {
	var s LoadStats
	if _, err := db.Exec(ctx, "INSERT INTO gb_kb_datasets (name) VALUES ($1) ON CONFLICT DO NOTHING", dataset); err != nil {
		return s, fmt.Errorf("error creating dataset %q (names are lowercase letters, digits, - and _): %w", dataset, err)
	}
	roots := map[string][]string{}
	for _, d := range docs {
		if d.Root != "" {
			roots[d.Root] = append(roots[d.Root], d.Source)
		}
		if d.Unchanged {
			s.Unchanged++
			continue
		}
		wrote, err := loadOne(ctx, db, dataset, d)
		if err != nil {
			return s, err
		}
		if wrote {
			s.Loaded++
		} else {
			s.Unchanged++
		}
	}
	for root, sources := range roots {
		tag, err := db.Exec(ctx, `DELETE FROM gb_kb_documents
			WHERE dataset = $1 AND root = $2 AND NOT (source = ANY ($3))`, dataset, root, sources)
		if err != nil {
			return s, fmt.Errorf("error removing the documents gone from %s: %w", root, err)
		}
		s.Removed += int(tag.RowsAffected())
	}
	return s, nil
}

// stored is a document as Load stores it: its body cleaned and cut to
// MaxDocBodyLen, its passages, and the hash of both.
type stored struct {
	body     string
	passages []Passage
	hash     string
}

// prepare cleans a document's body and finds its passages: the given
// ones when the body was kept as it was, else those Split finds.
func prepare(d Document) stored {
	body := d.Body
	if len(body) > MaxDocBodyLen {
		body = body[:MaxDocBodyLen]
	}
	body = strings.ToValidUTF8(strings.ReplaceAll(body, "\x00", ""), "")
	passages := d.Passages
	if passages == nil || body != d.Body {
		passages = Split(body)
	}
	h := sha256.New()
	meta, _ := json.Marshal(passages) // plain structs: it cannot fail
	for _, part := range []string{splitVersion, d.Title, body, string(meta)} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	return stored{body: body, passages: passages, hash: hex.EncodeToString(h.Sum(nil))}
}

// loadOne stores one document and its passages in one transaction, or
// leaves it when its hash is the one stored. It reports whether it wrote.
func loadOne(ctx context.Context, db DB, dataset string, d Document) (bool, error) {
	st := prepare(d)
	var have *string
	err := db.QueryRow(ctx, "SELECT content_hash FROM gb_kb_documents WHERE dataset = $1 AND source = $2",
		dataset, d.Source).Scan(&have)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("error reading %s: %w", d.Source, err)
	}
	if have != nil && *have == st.hash {
		if d.FileHash != "" {
			_, err := db.Exec(ctx, "UPDATE gb_kb_documents SET file_hash = $3 WHERE dataset = $1 AND source = $2", dataset, d.Source, d.FileHash)
			return false, err
		}
		return false, nil
	}
	err = inTx(ctx, db, func(tx DB) error {
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO gb_kb_documents (dataset, source, title, body, content_hash, root, file_hash)
			VALUES ($1, $2, $3, $4, $5, nullif($6, ''), nullif($7, ''))
			ON CONFLICT (dataset, source) DO UPDATE
			SET title = excluded.title, body = excluded.body, content_hash = excluded.content_hash, root = excluded.root,
			    file_hash = excluded.file_hash
			RETURNING id`, dataset, d.Source, d.Title, st.body, st.hash, d.Root, d.FileHash).Scan(&id)
		if err != nil {
			return err
		}
		return storePassages(ctx, tx, id, d.Title, st.body, st.passages)
	})
	if err != nil {
		return false, fmt.Errorf("error loading %s: %w", d.Source, err)
	}
	return true, nil
}

// storePassages replaces the passages of document id, whose title and
// body are title and body. The first passage is indexed with the title
// too, so that a search for a document's title ("package net/http")
// finds the document at its start.
func storePassages(ctx context.Context, db DB, id int64, title, body string, passages []Passage) error {
	if _, err := db.Exec(ctx, "DELETE FROM gb_kb_passages WHERE document_id = $1", id); err != nil {
		return err
	}
	n := len(passages)
	starts, lens, headings, symbols, texts := make([]int32, n), make([]int32, n), make([]string, n), make([]string, n), make([]string, n)
	firsts, words := make([]bool, n), make([]string, n)
	texter := newRuneSlicer(body)
	for i, p := range passages {
		starts[i], lens[i], headings[i] = int32(p.Offset), int32(p.Len), clip(p.Heading, MaxHeadingLen)
		symbols[i], firsts[i] = strings.Join(p.Symbols, " "), p.First
		words[i] = symbolWords(p.Symbols)
		if i == 0 {
			words[i] = title + " " + words[i]
		}
		texts[i] = texter.slice(p.Offset, p.Len)
	}
	_, err := db.Exec(ctx, `INSERT INTO gb_kb_passages (document_id, ord, start_char, char_len, heading, symbols, first, tsv)
		SELECT $1, p.ord - 1, p.s, p.l, p.h, p.sym, p.f,
		       setweight(to_tsvector('english', p.h || ' ' || p.sym || ' ' || p.w), 'A') ||
		       setweight(to_tsvector('english', p.t), 'B')
		FROM unnest($2::int[], $3::int[], $4::text[], $5::text[], $6::bool[], $7::text[], $8::text[])
		     WITH ORDINALITY AS p(s, l, h, sym, f, t, w, ord)`,
		id, starts, lens, headings, symbols, firsts, texts, words)
	return err
}

// runeSlicer cuts pieces of a text by character offsets, in increasing
// order, counting the text once.
type runeSlicer struct {
	s          string
	byteAt, at int // the character at and its byte offset
}

func newRuneSlicer(s string) *runeSlicer { return &runeSlicer{s: s} }

// slice is n characters from character offset (clipped to the text); an
// offset before the last one asked for counts again from the start.
func (r *runeSlicer) slice(offset, n int) string {
	if offset < r.at {
		r.byteAt, r.at = 0, 0
	}
	r.byteAt, r.at = advance(r.s, r.byteAt, offset-r.at), offset
	end := advance(r.s, r.byteAt, n)
	return r.s[r.byteAt:end]
}

// advance is the byte offset n characters after byte offset from.
func advance(s string, from, n int) int {
	for ; n > 0 && from < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[from:])
		from += size
	}
	return from
}

// txBeginner is a pool or a transaction, which can begin a (nested)
// transaction.
type txBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// inTx runs fn in a transaction of db when db can begin one, else on db.
func inTx(ctx context.Context, db DB, fn func(DB) error) error {
	b, ok := db.(txBeginner)
	if !ok {
		return fn(db)
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// FileHashes are the file hashes of a dataset's documents by source, for
// FromPathsWith's Known: loading a folder again reads only the files
// whose bytes changed.
func FileHashes(ctx context.Context, db DB, dataset string) (map[string]string, error) {
	rows, err := db.Query(ctx, "SELECT source, file_hash FROM gb_kb_documents WHERE dataset = $1 AND file_hash IS NOT NULL", dataset)
	if err != nil {
		return nil, fmt.Errorf("error reading the files of dataset %q: %w", dataset, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var src, h string
		if err := rows.Scan(&src, &h); err != nil {
			return nil, fmt.Errorf("error reading the files of dataset %q: %w", dataset, err)
		}
		out[src] = h
	}
	return out, rows.Err()
}
