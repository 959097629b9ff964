package jobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gbresearch/gb/jobs/llm"
)

// The tool ask_owner asks the owner of an interactive root research one
// question and parks the root until the answer or the question's deadline
// (owner_wait.go). Sub-agents never get it.

// Limits of the questions a root asks its owner and of their answers.
const (
	// MaxQuestionLen bounds a question, in characters.
	MaxQuestionLen = 2000
	// MaxAnswerLen bounds an answer, in characters.
	MaxAnswerLen = 10000
	// MaxQuestions bounds the questions one research may ask.
	MaxQuestions = 5
)

func init() {
	register(&tool{
		spec: llm.ToolSpec{Name: toolAskOwner,
			Description: "Ask the person who started this research one short question and wait for the answer, " +
				"which may take hours; at the question's deadline you are told that no answer came. " +
				"Only for a question whose answer changes the research."},
		args:  askOwnerArgs{},
		state: StateInputRequired,
		run:   runAskOwner,
	})
}

// asksOwner reports whether the run may ask its owner: a root started
// with interactive.
func asksOwner(run *Run) bool { return run.IsRoot() && run.Interactive }

// askOwnerArgs are the arguments of ask_owner; question's max is
// MaxQuestionLen.
type askOwnerArgs struct {
	Question string `json:"question" desc:"one short question" trim:"true" min:"1" max:"2000"`
}

func runAskOwner(ctx context.Context, env *toolEnv, raw json.RawMessage) (string, error) {
	var args askOwnerArgs
	if err := decodeArgs(raw, &args); err != nil {
		return "", err
	}
	if env.park != nil {
		return "", toolErrorf("this step already waits (%s): only one call of a step may wait", env.park.what())
	}
	var asked int
	if err := env.tx.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_events WHERE root_id = $1 AND run_id = $1
		AND kind = $2`, env.run.ID, EventInputRequired).Scan(&asked); err != nil {
		return "", fmt.Errorf("error counting the questions of run %d: %w", env.run.ID, err)
	}
	if asked >= MaxQuestions {
		return "", toolErrorf("you have asked your owner %d questions, the most a research may; "+
			"go on with your best judgement", asked)
	}
	env.park = &parkRequest{callID: env.callID, question: args.Question, until: answerDeadline(env.run)}
	return "", nil // answered when the root resumes (answerResult)
}
