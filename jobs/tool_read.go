package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// The tool read reads one document of the knowledge base; it is read-only.
// Each read is recorded as a source of the run (kind kb), and a note an
// agent remembered comes inside an untrusted block.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolRead,
			Description: fmt.Sprintf("Read one document of the knowledge base by its id (from search), "+
				"%d characters at a time from offset.", kb.MaxReadLen)},
		args:  readArgs{},
		state: StateReading,
		read:  readDocument,
	})
}

// notePrefix starts the source of a note an agent remembered (kb.Remember).
const notePrefix = "note:"

// readArgs are the arguments of read.
type readArgs struct {
	ID     int64 `json:"id" desc:"the document's id, from search"`
	Offset int   `json:"offset" desc:"character to read from" optional:"true" min:"0" default:"0"`
}

func readDocument(ctx context.Context, env *readEnv, raw json.RawMessage) (readResult, error) {
	var args readArgs
	if err := decodeArgs(raw, &args); err != nil {
		return readResult{}, err
	}
	d, total, err := kb.ReadAt(ctx, env.agent.pool, env.run.Dataset, args.ID, args.Offset)
	if errors.Is(err, kb.ErrNotFound) {
		return readResult{}, toolErrorf("no document with id %d in this research's knowledge base; use an id from search", args.ID)
	}
	if err != nil {
		return readResult{}, err
	}
	body := d.Body
	if strings.HasPrefix(d.Source, notePrefix) {
		// Another agent wrote it, maybe from a page.
		body = untrusted(env.agent.noteLabel(d.Source), body)
	}
	text := fmt.Sprintf("[id %d] %s (%s)\n\n%s", d.ID, d.Title, d.Source, body)
	if end := min(args.Offset, total) + utf8.RuneCountInString(d.Body); args.Offset > 0 || end < total {
		text += fmt.Sprintf("\n\n[characters %d to %d of %d", min(args.Offset, total), end, total)
		if end < total {
			text += fmt.Sprintf("; %d left: call read with \"offset\": %d to read on]", total-end, end)
		} else {
			text += "; nothing left]"
		}
	}
	src := kbSource(env.run.Dataset, d.ID, d.Source, d.Title, d.Body)
	return readResult{text: text, sources: []Source{src}}, nil
}
