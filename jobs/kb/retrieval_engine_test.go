package kb_test

import (
	"context"

	"github.com/gbresearch/gb/jobs/kb"
)

// engine is how the retrieval table searches and jumps; this one is the
// package's own: a hit leads to its best passage's offset, and find to
// the one passage it names or to the passages it lists.
// testdata/retrieval_engine_before.go.txt is the engine for the code
// before passages (docs/retrieval.md says how to run it).
type engine interface {
	db() kb.DB
	search(ctx context.Context, query string) ([]hitView, error)
	find(ctx context.Context, id int64, text string) ([]findPlace, error)
}

type passageEngine struct {
	pool    kb.DB
	dataset string
}

func newEngine(pool kb.DB, dataset string) engine { return &passageEngine{pool, dataset} }

func (e *passageEngine) db() kb.DB { return e.pool }

func (e *passageEngine) search(ctx context.Context, query string) ([]hitView, error) {
	hits, err := kb.Search(ctx, e.pool, e.dataset, query, 5)
	out := make([]hitView, len(hits))
	for i, h := range hits {
		out[i] = hitView{id: h.ID, source: h.Source, offset: h.Offset}
	}
	return out, err
}

// find is what one read with find leads to: the passage it reads when
// exactly one passage is named, else the passages it lists.
func (e *passageEngine) find(ctx context.Context, id int64, text string) ([]findPlace, error) {
	f, err := kb.Find(ctx, e.pool, e.dataset, id, text, 0)
	if err != nil {
		return nil, err
	}
	if len(f.Named) == 1 {
		return []findPlace{{offset: f.Named[0].Offset}}, nil
	}
	var out []findPlace
	for _, m := range append(f.Named, f.Matches...) {
		out = append(out, findPlace{offset: m.Passage.Offset})
	}
	return out, nil
}
