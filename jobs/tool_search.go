package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// The tool search searches the knowledge base of the run's dataset and the
// notes of its research tree, in one ranking; it is read-only.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolSearch,
			Description: "Search the knowledge base of this research and the notes its agents remembered. " + kb.HowSearchMatches +
				" Each hit: [id N] title (source), its best passage's offset and heading (read from there), a snippet."},
		args:  searchArgs{},
		state: StateSearching,
		read:  readSearch,
	})
}

// searchArgs are the arguments of search; their maxes are kb.MaxQueryLen
// and kb.MaxResults, and a query has at most kb.MaxQueryTerms words.
type searchArgs struct {
	Query string `json:"query" desc:"keywords, at most 32 words" trim:"true" min:"1" max:"500"`
	Limit int    `json:"limit" desc:"how many documents" optional:"true" min:"1" max:"10" default:"5"`
}

// check checks the query's words, as kb.Search would.
func (a *searchArgs) check() error {
	if err := kb.CheckQuery(a.Query); err != nil {
		return &toolError{msg: err.Error()}
	}
	return nil
}

func readSearch(ctx context.Context, env *readEnv, raw json.RawMessage) (readResult, error) {
	var args searchArgs
	if err := decodeArgs(raw, &args); err != nil {
		return readResult{}, err
	}
	if err := args.check(); err != nil {
		return readResult{}, err
	}
	hits, err := kb.SearchIn(ctx, env.agent.pool, kbScope(env.run), args.Query, args.Limit)
	if err != nil {
		return readResult{}, err
	}
	if len(hits) == 0 {
		return readResult{text: fmt.Sprintf("No documents match %q. Try other words.", args.Query)}, nil
	}
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "[id %d] %s (%s)\n%s\n%s\n\n", h.ID, h.Title, h.Source, hitPlace(h), h.Snippet)
	}
	return readResult{text: strings.TrimSpace(b.String())}, nil
}

// hitPlace is the line of a hit that says where its best passage is and
// how the document matched.
func hitPlace(h kb.Hit) string {
	place := fmt.Sprintf("at offset %d", h.Offset)
	if h.Heading != "" {
		place += ": " + h.Heading
	}
	if s := namedSymbol(h); s != "" {
		place += " [" + s + "]"
	}
	match := "some of the terms"
	if h.Every {
		match = "every term"
	}
	passages := "passages"
	if h.Passages == 1 {
		passages = "passage"
	}
	return fmt.Sprintf("%s (%s; %d matching %s)", place, match, h.Passages, passages)
}

// namedSymbol is the symbol a hit's heading declares when the heading
// does not spell it (a method's Server.Shutdown for "func (*Server)
// Shutdown"), else "".
func namedSymbol(h kb.Hit) string {
	if len(h.Symbols) == 0 || strings.Contains(h.Heading, h.Symbols[0]) {
		return ""
	}
	return h.Symbols[0]
}

// kbScope is what the agents of run see of the knowledge base: its
// dataset, and the notes of its tree and of the trees its owner let it
// read (notes_from).
func kbScope(run *Run) kb.Scope { return kb.Scope{Dataset: run.Dataset, Tree: run.RootID} }
