package kb

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Limits of Find: the text looked for, in characters, the places it
// lists, and the characters of each place's excerpt.
const (
	MaxFindLen     = 200
	MaxFindMatches = 10
	FindExcerptLen = 240
)

// Match is a place in a document that Find reached: where the text is
// (Offset, in characters of the body), the passage it is in and a short
// excerpt around it. Named is set when the passage's heading or one of its
// symbols is the text looked for (find "Shutdown" names the passage of
// "func (*Server) Shutdown"); the match of such a passage is its start.
type Match struct {
	Offset  int     `json:"offset"`
	Passage Passage `json:"passage"`
	Excerpt string  `json:"excerpt"`
	Named   bool    `json:"named,omitempty"`
}

// Found is what Find found in one document: its id, source and title,
// the length of its body in characters, the passages that name the text
// (a heading or symbol, at most MaxFindMatches) and the passages that
// have the text (the first place in each, in order, at most
// MaxFindMatches), and how many passages with the text were not listed.
type Found struct {
	Document Document `json:"document"`
	Total    int      `json:"total"`
	Named    []Match  `json:"named"`
	Matches  []Match  `json:"matches"`
	More     int      `json:"more"`
}

// Find looks in document id of a dataset, from character offset from on,
// for the passages that name text (their heading or symbol is text, case
// aside) and the places that have it (case aside, any white space
// matching any white space). The document's body is not returned.
func Find(ctx context.Context, db DB, dataset string, id int64, text string, from int) (Found, error) {
	return FindIn(ctx, db, Scope{Dataset: dataset}, id, text, from)
}

// FindIn is Find in a document of a scope: of its dataset, or a note of
// its tree.
func FindIn(ctx context.Context, db DB, scope Scope, id int64, text string, from int) (Found, error) {
	text = strings.TrimSpace(text)
	if n := utf8.RuneCountInString(text); n == 0 || n > MaxFindLen || !utf8.ValidString(text) {
		return Found{}, &queryError{fmt.Sprintf("find must be 1 to %d characters of text", MaxFindLen)}
	}
	var f Found
	var body string
	err := db.QueryRow(ctx, `SELECT id, source, title, body, char_length(body)
		FROM gb_kb_documents d WHERE `+scopeSQL+` AND id = $3`, scope.Dataset, scope.Tree, id).
		Scan(&f.Document.ID, &f.Document.Source, &f.Document.Title, &body, &f.Total)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, ErrNotFound
	}
	if err != nil {
		return f, fmt.Errorf("error reading document %d: %w", id, err)
	}
	passages, err := documentPassages(ctx, db, id)
	if err != nil {
		return f, err
	}
	if len(passages) == 0 {
		passages = Split(body)
	}
	f.Named = named(passages, text, from, body)
	f.Matches, f.More = places(body, passages, text, from)
	return f, nil
}

// documentPassages are the stored passages of a document, in order.
func documentPassages(ctx context.Context, db DB, id int64) ([]Passage, error) {
	rows, err := db.Query(ctx, `SELECT start_char, char_len, heading, symbols, first
		FROM gb_kb_passages WHERE document_id = $1 ORDER BY ord`, id)
	if err != nil {
		return nil, fmt.Errorf("error reading the passages of document %d: %w", id, err)
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Passage, error) {
		var p Passage
		var symbols string
		err := r.Scan(&p.Offset, &p.Len, &p.Heading, &symbols, &p.First)
		p.Symbols = strings.Fields(symbols)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading the passages of document %d: %w", id, err)
	}
	return ps, nil
}

// named are the passages starting at or after from that name text, the
// first of each heading, with their start as the match.
func named(passages []Passage, text string, from int, body string) []Match {
	var out []Match
	seen := map[string]bool{}
	cut := newRuneSlicer(body)
	for _, p := range passages {
		if p.Offset < from || seen[p.Heading] || !names(p, text) {
			continue
		}
		seen[p.Heading] = true
		if len(out) < MaxFindMatches {
			out = append(out, Match{Offset: p.Offset, Passage: p, Named: true, Excerpt: excerpt(cut.slice(p.Offset, FindExcerptLen))})
		}
	}
	return out
}

// headingKinds are the words a heading of a Go declaration starts with.
var headingKinds = []string{"func ", "type ", "var ", "const ", "package "}

// names reports whether a passage's heading or one of its symbols is
// text, case aside: the whole heading, the heading without its kind
// ("(*Server) Shutdown"), a symbol ("Server.Shutdown") or a symbol's last
// part ("Shutdown").
func names(p Passage, text string) bool {
	h := p.Heading
	if strings.EqualFold(h, text) {
		return true
	}
	for _, k := range headingKinds {
		if rest, ok := strings.CutPrefix(h, k); ok && strings.EqualFold(rest, text) {
			return true
		}
	}
	for _, s := range p.Symbols {
		last := s[strings.LastIndexByte(s, '.')+1:]
		if strings.EqualFold(s, text) || strings.EqualFold(last, text) {
			return true
		}
	}
	return false
}

// places finds text in body from character offset from on: the first
// place of each passage that has it, at most MaxFindMatches, and how many
// more passages have it.
func places(body string, passages []Passage, text string, from int) ([]Match, int) {
	re := phraseRE(text)
	var out []Match
	more := 0
	start := advance(body, 0, from)
	counter := runeCounter{s: body}
	cut := newRuneSlicer(body)
	last := -1 // index of the passage of the last place
	for _, m := range re.FindAllStringIndex(body[start:], -1) {
		at := counter.at(start + m[0])
		i := passageAt(passages, at)
		if i == last {
			continue
		}
		last = i
		if len(out) == MaxFindMatches {
			more++
			continue
		}
		lead := min(at, FindExcerptLen/3)
		mt := Match{Offset: at}
		if i >= 0 {
			mt.Passage = passages[i]
			lead = min(lead, at-mt.Passage.Offset) // from the passage's start at most
		}
		text := cut.slice(at-lead, FindExcerptLen)
		if lead > 0 {
			// Start at a word: drop the word cut before the place.
			if i := strings.IndexAny(text, " \t\n"); i >= 0 && i < lead {
				text = text[i+1:]
			}
		}
		mt.Excerpt = excerpt(text)
		out = append(out, mt)
	}
	return out, more
}

// phraseRE matches text case aside, any run of white space in it
// matching any run of white space, and the // that goes on a comment on
// the next line of code.
func phraseRE(text string) *regexp.Regexp {
	words := strings.Fields(text)
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	return regexp.MustCompile(`(?i)` + strings.Join(words, `\s+(?://[ \t]*)?`))
}

// passageAt is the index of the passage that holds character at (-1 for
// none); passages are in order.
func passageAt(passages []Passage, at int) int {
	lo, hi := 0, len(passages)
	for lo < hi {
		mid := (lo + hi) / 2
		if passages[mid].Offset+passages[mid].Len <= at {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(passages) && passages[lo].Offset <= at {
		return lo
	}
	return -1
}

// runeCounter turns increasing byte offsets of a text into character
// offsets, counting the text once.
type runeCounter struct {
	s         string
	byteAt, n int
}

func (c *runeCounter) at(b int) int {
	c.n += utf8.RuneCountInString(c.s[c.byteAt:b])
	c.byteAt = b
	return c.n
}

// excerpt is a piece of text on one line: its white space runs made
// single spaces.
func excerpt(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
