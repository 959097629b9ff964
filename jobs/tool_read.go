package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/doctext"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// The tool read reads one document of the knowledge base; it is read-only.
// It reads from an offset, or finds a phrase or symbol in the document
// (find): the passages that name it or have it, or, when exactly one
// passage names it, that passage read at once. Each read is recorded as a
// source of the run (kind kb), and a note an agent remembered comes
// inside an untrusted block.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolRead,
			Description: fmt.Sprintf("Read a knowledge-base document by id, %d characters from offset, or from a page of a PDF, deck or workbook (\"page\"; reads say the pages they hold, to cite as [n, p. N]). "+
				`"find" (a phrase, heading or symbol, e.g. "Server.Shutdown") reads from the one passage it names, `+
				`else lists the passages naming or holding it (offsets, excerpts; from "offset" on when above 0).`, kb.MaxReadLen)},
		args:  readArgs{},
		state: StateReading,
		read:  readDocument,
	})
}

// notePrefix starts the source of a note an agent remembered (kb.Remember).
const notePrefix = "note:"

// readArgs are the arguments of read; find's max is kb.MaxFindLen.
type readArgs struct {
	ID     int64  `json:"id" desc:"the document's id, from search" min:"1"`
	Offset int    `json:"offset" desc:"character to read from" optional:"true" min:"0" default:"0"`
	Find   string `json:"find" desc:"a phrase, heading or symbol to jump to in the document" optional:"true" trim:"true" max:"200"`
	Page   int    `json:"page" desc:"a document's page (slide, sheet) to read from, counted from 1" optional:"true" min:"0" max:"100000" default:"0"`
}

func readDocument(ctx context.Context, env *readEnv, raw json.RawMessage) (readResult, error) {
	var args readArgs
	if err := decodeArgs(raw, &args); err != nil {
		return readResult{}, err
	}
	if args.Find != "" {
		return findInDocument(ctx, env, args)
	}
	if args.Page > 0 {
		parts, err := kb.Parts(ctx, env.agent.pool, env.run.Dataset, args.ID)
		if errors.Is(err, kb.ErrNotFound) {
			return readResult{}, noDocument(args.ID)
		}
		if err != nil {
			return readResult{}, err
		}
		part, err := pageOf(parts, args.Page)
		if err != nil {
			return readResult{}, err
		}
		return readFrom(ctx, env, args.ID, part.Offset, fmt.Sprintf("[%s starts at character %d: reading from there]", part.Cite(), part.Offset))
	}
	return readFrom(ctx, env, args.ID, args.Offset, "")
}

// readFrom reads document id from offset; note, when set, says why it
// reads from there and comes before the text.
func readFrom(ctx context.Context, env *readEnv, id int64, offset int, note string) (readResult, error) {
	d, total, err := kb.ReadIn(ctx, env.agent.pool, kbScope(env.run), id, offset)
	if errors.Is(err, kb.ErrNotFound) {
		return readResult{}, noDocument(id)
	}
	if err != nil {
		return readResult{}, err
	}
	body := d.Body
	if strings.HasPrefix(d.Source, notePrefix) {
		// Another agent wrote it, maybe from a page.
		body = untrusted(env.agent.noteLabel(d.Source), body)
	}
	text := fmt.Sprintf("[id %d] %s (%s)\n\n", d.ID, d.Title, d.Source)
	if note != "" {
		text += note + "\n\n"
	}
	text += body
	on := ""
	if parts, err := kb.Parts(ctx, env.agent.pool, env.run.Dataset, id); err == nil && len(parts) > 0 {
		end := min(offset, total) + utf8.RuneCountInString(d.Body)
		on = fmt.Sprintf(", %s of %d %s", doctext.Span(parts, min(offset, total), end), len(parts), strings.ToLower(partsName(parts)))
	}
	if end := min(offset, total) + utf8.RuneCountInString(d.Body); offset > 0 || end < total || on != "" {
		text += fmt.Sprintf("\n\n[characters %d to %d of %d%s", min(offset, total), end, total, on)
		if end < total {
			text += fmt.Sprintf("; %d left: call read with \"offset\": %d to read on]", total-end, end)
		} else {
			text += "; nothing left]"
		}
	}
	src := kbSource(env.run.Dataset, d.ID, d.Source, d.Title, d.Body)
	return readResult{text: text, sources: []Source{src}}, nil
}

func noDocument(id int64) error {
	return toolErrorf("no document with id %d in this research's knowledge base; use an id from search", id)
}

// findInDocument answers a read with find: the one passage named by the
// text read at once (without an offset), else the places listed.
func findInDocument(ctx context.Context, env *readEnv, args readArgs) (readResult, error) {
	f, err := kb.FindIn(ctx, env.agent.pool, kbScope(env.run), args.ID, args.Find, args.Offset)
	if errors.Is(err, kb.ErrNotFound) {
		return readResult{}, noDocument(args.ID)
	}
	if errors.Is(err, kb.ErrBadQuery) {
		return readResult{}, toolErrorf("%s", err.Error())
	}
	if err != nil {
		return readResult{}, err
	}
	if len(f.Named) == 1 && args.Offset == 0 {
		m := f.Named[0]
		note := fmt.Sprintf("[find %q: reading from offset %d, the start of %q, the one passage named %q; %s]",
			args.Find, m.Offset, m.Passage.Heading, args.Find, textCount(f))
		return readFrom(ctx, env, args.ID, m.Offset, note)
	}
	d := f.Document
	var b strings.Builder
	fmt.Fprintf(&b, "[id %d] %s (%s), %d characters\n\n", d.ID, d.Title, d.Source, f.Total)
	if len(f.Named) == 0 && len(f.Matches) == 0 {
		from := ""
		if args.Offset > 0 {
			from = fmt.Sprintf(" from offset %d on", args.Offset)
		}
		fmt.Fprintf(&b, "find %q: no passage%s is named by it or has it. Search for other words, or read by offset.", args.Find, from)
		return readResult{text: b.String()}, nil
	}
	fmt.Fprintf(&b, "find %q: %s named by it; %s.\n", args.Find, namedCount(len(f.Named)), textCount(f))
	var excerpts strings.Builder
	writeMatches(&b, &excerpts, "Named", f.Named)
	writeMatches(&b, &excerpts, "With the text", f.Matches)
	if f.More > 0 {
		last := f.Matches[len(f.Matches)-1].Passage
		fmt.Fprintf(&b, "\n%d more passages have the text: call read with this find and \"offset\": %d to list them.", f.More, last.Offset+last.Len)
	}
	fmt.Fprintf(&b, "\nRead one with {\"id\": %d, \"offset\": N}.", d.ID)
	text := b.String()
	if strings.HasPrefix(d.Source, notePrefix) {
		text = untrusted("places in note "+d.Source+" remembered by an agent, which may quote web pages", text)
	}
	return readResult{text: text, sources: []Source{kbSource(env.run.Dataset, d.ID, d.Source, d.Title, excerpts.String())}}, nil
}

// textCount says how many passages have the text.
func textCount(f kb.Found) string {
	if n := len(f.Matches) + f.More; n != 1 {
		return fmt.Sprintf("%d passages have the text", n)
	}
	return "1 passage has the text"
}

// namedCount says how many passages are named by the text.
func namedCount(n int) string {
	switch n {
	case 0:
		return "no passage is"
	case 1:
		return "1 passage is"
	}
	return fmt.Sprintf("%d passages are", n)
}

// writeMatches lists matches under a title, one line each: offset,
// heading and excerpt; the excerpts are gathered in excerpts too.
func writeMatches(b, excerpts *strings.Builder, title string, ms []kb.Match) {
	if len(ms) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n", title)
	for _, m := range ms {
		heading := m.Passage.Heading
		if heading == "" {
			heading = "(before the first heading)"
		}
		fmt.Fprintf(b, "- offset %d, in %s: %s\n", m.Offset, heading, m.Excerpt)
		excerpts.WriteString(m.Excerpt + "\n")
	}
}
