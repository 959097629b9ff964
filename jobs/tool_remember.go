package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// The tool remember stores a note in the knowledge base, in the step's transaction.

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolRemember,
			Description: "Store a short note of a finding, with its source, in the knowledge base, where the other agents of this research find it.",
			Parameters: schema(`{"type":"object","properties":{"title":{"type":"string","description":"at most 200 characters"},` +
				`"text":{"type":"string","description":"at most 10000 characters"}},` +
				`"required":["title","text"],"additionalProperties":false}`)},
		state: StateWriting,
		run:   runRemember,
	})
}

// rememberArgs are the arguments of remember.
type rememberArgs struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

const rememberShape = `{"title": "...", "text": "..."}`

// check trims the title and the text and checks their lengths.
func (a *rememberArgs) check() error {
	a.Title, a.Text = strings.TrimSpace(a.Title), strings.TrimSpace(a.Text)
	if err := checkText("title", a.Title, kb.MaxTitleLen); err != nil {
		return err
	}
	return checkText("text", a.Text, kb.MaxNoteLen)
}

func runRemember(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args rememberArgs
	if err := decodeArgs(raw, &args, rememberShape); err != nil {
		return "", err
	}
	if err := args.check(); err != nil {
		return "", err
	}
	id, err := kb.Remember(ctx, env.tx, env.run.Dataset, env.run.ID, args.Title, args.Text)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Remembered as document %d.", id), nil
}
