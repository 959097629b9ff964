package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// The tool read reads one document of the knowledge base; it is read-only.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolRead,
			Description: "Read one document of the knowledge base by its id (from search).",
			Parameters:  schema(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":false}`)},
		state: StateReading,
		read:  readDocument,
	})
}

// readArgs are the arguments of read.
type readArgs struct {
	ID int64 `json:"id"`
}

const readShape = `{"id": document id}`

func readDocument(ctx context.Context, env *readEnv, raw json.RawMessage) (readResult, error) {
	var args readArgs
	if err := decodeArgs(raw, &args, readShape); err != nil {
		return readResult{}, err
	}
	d, err := kb.Read(ctx, env.agent.pool, env.run.Dataset, args.ID)
	if errors.Is(err, kb.ErrNotFound) {
		return readResult{}, toolErrorf("no document with id %d in this research's knowledge base; use an id from search", args.ID)
	}
	if err != nil {
		return readResult{}, err
	}
	return readResult{text: fmt.Sprintf("[id %d] %s (%s)\n\n%s", d.ID, d.Title, d.Source, d.Body)}, nil
}
