package jobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// The tool remember stores a note in the notes of the run's research tree,
// in the step's transaction: the agents of the tree find it with search
// and read, and so do those of a research its owner started with
// notes_from naming this one; it goes when the tree is deleted.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolRemember,
			Description: "Store a short note of a finding, with its source, in this research's notes: search and read find it, for you and the other agents of this research."},
		args:  rememberArgs{},
		state: StateWriting,
		run:   runRemember,
	})
}

// rememberArgs are the arguments of remember; their maxes are
// kb.MaxTitleLen and kb.MaxNoteLen, which kb.Remember holds to.
type rememberArgs struct {
	Title string `json:"title" desc:"the note's title" trim:"true" min:"1" max:"200"`
	Text  string `json:"text" desc:"the finding and its source" trim:"true" min:"1" max:"10000"`
}

func runRemember(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args rememberArgs
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	id, err := kb.Remember(ctx, env.tx, env.run.RootID, env.run.ID, args.Title, args.Text)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Remembered as document %d.", id), nil
}
