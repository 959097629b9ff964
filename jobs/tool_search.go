package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// The tool search searches the knowledge base of the run's dataset; it is read-only.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolSearch,
			Description: "Search the knowledge base of this research. Returns ranked documents with id, title, source and a snippet.",
			Parameters: schema(`{"type":"object","properties":{"query":{"type":"string","description":"keywords, at most 500 characters and 32 words"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":10}},"required":["query"],"additionalProperties":false}`)},
		state: StateSearching,
		read:  readSearch,
	})
}

// searchArgs are the arguments of search.
type searchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

const searchShape = `{"query": "keywords", "limit": 1..10}`

// check trims the query, checks it and fills the default limit.
func (a *searchArgs) check() error {
	a.Query = strings.TrimSpace(a.Query)
	if err := kb.CheckQuery(a.Query); err != nil {
		return &toolError{msg: err.Error()}
	}
	if a.Limit < 0 || a.Limit > kb.MaxResults {
		return toolErrorf("limit must be 1 to %d", kb.MaxResults)
	}
	a.Limit = cmpOr(a.Limit, 5)
	return nil
}

func readSearch(ctx context.Context, env *readEnv, raw json.RawMessage) (readResult, error) {
	var args searchArgs
	if err := decodeArgs(raw, &args, searchShape); err != nil {
		return readResult{}, err
	}
	if err := args.check(); err != nil {
		return readResult{}, err
	}
	hits, err := kb.Search(ctx, env.agent.pool, env.run.Dataset, args.Query, args.Limit)
	if err != nil {
		return readResult{}, err
	}
	if len(hits) == 0 {
		return readResult{text: fmt.Sprintf("No documents match %q. Try other words.", args.Query)}, nil
	}
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "[id %d] %s (%s)\n%s\n\n", h.ID, h.Title, h.Source, h.Snippet)
	}
	return readResult{text: strings.TrimSpace(b.String())}, nil
}
