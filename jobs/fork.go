package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// A fork is a new research that replays the first steps of a recorded
// one's root from the record and goes on live from there, with whatever
// its owner changed: the model, the pin of its prompts and types, its
// budget, its steps, its citation check, or an instruction for the first
// live step. It starts in one transaction, like any research, and makes
// no model call for what it replays:
//
//   - the root's steps 1 to N are copied as they were recorded (their
//     messages byte for byte, so the live step's request begins with the
//     bytes the original's did), marked replayed, with no usage and no
//     ledger row;
//   - a sub-agent spawned by those steps whose result the root had read
//     by step N (a wait_subagents or read_report answered, or a cancel)
//     is copied with its own sub-agents, steps, sources and notes, ended
//     as it was; one whose result the root had not read is spawned anew,
//     with the same name, reason, task and type, and runs live;
//   - the sources and notes of what is copied come with it, up to step N;
//   - a step N that parked on wait_subagents leaves the fork parked on
//     the same call, resumed when its live sub-agents end.
//
// What is not replayed: a fork from a step that waits for its owner's
// answer or a plan decision, or for messages, is refused (fork from the
// step before or after); the messages the root sent to its sub-agents
// are not sent again to the ones spawned anew.

// MaxForkInstruction bounds a fork's instruction, in characters.
const MaxForkInstruction = 4000

// ForkParams say what to fork and what to change.
type ForkParams struct {
	UserID int64
	// ID is the research forked: its root, or any run of its tree.
	ID int64
	// Agent is the run whose steps are replayed; 0 or the root's id (a
	// fork replays its original's root).
	Agent int64
	// Step is the last step replayed; the fork goes on live from the next.
	Step int
	// Model, MaxSteps, MaxCostUSD, MaxTokens and Citations replace the
	// original's when set.
	Model      string
	MaxSteps   int
	MaxCostUSD float64
	MaxTokens  int64
	Citations  string
	// Pin is PinRun (default: the prompts, types and tools the original
	// was pinned to) or PinLatest (the deploy's).
	Pin string
	// Instruction, when set, is given to the first live step as its
	// owner's message.
	Instruction string
}

// check validates what does not need the original.
func (p *ForkParams) check() error {
	p.Instruction = strings.TrimSpace(p.Instruction)
	switch n := utf8.RuneCountInString(p.Instruction); {
	case !utf8.ValidString(p.Instruction) || strings.ContainsRune(p.Instruction, 0):
		return &FieldError{"instruction", "must be valid UTF-8 text with no NUL characters"}
	case n > MaxForkInstruction:
		return &FieldError{"instruction", fmt.Sprintf("is %d characters; at most %d are allowed", n, MaxForkInstruction)}
	}
	if p.Step < 0 {
		return &FieldError{"step", fmt.Sprintf("is %d; give the last step to replay, 0 to replay none", p.Step)}
	}
	return checkPinMode("pin", p.Pin)
}

// Fork starts a research forked from step p.Step of the root of research
// p.ID, which the user owns (see the comment above ForkParams).
func (a *Service) Fork(ctx context.Context, p ForkParams) (*Run, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if p.Model != "" && a.modelNamed(p.Model) == nil {
		return nil, &FieldError{"model", fmt.Sprintf("%q is not configured; the models are: %s", p.Model, strings.Join(a.modelNames(), ", "))}
	}
	var fork *Run
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		orig, err := a.forkOrigin(ctx, tx, p)
		if err != nil {
			return err
		}
		steps, err := forkSteps(ctx, tx, orig, p.Step)
		if err != nil {
			return err
		}
		plan, err := analyseFork(steps, p.Step)
		if err != nil {
			return err
		}
		sp, err := a.forkStartParams(orig, p)
		if err != nil {
			return err
		}
		c, err := startChecks(ctx, tx, sp)
		if err != nil {
			return err
		}
		if err := c.check(ctx, tx, sp); err != nil {
			return err
		}
		if fork, err = a.insertFork(ctx, tx, orig, p, sp, plan); err != nil {
			return err
		}
		return a.replayFork(ctx, tx, orig, fork, p, plan, steps)
	})
	if err != nil {
		return nil, err
	}
	return fork, nil
}

// forkOrigin reads the root of the research forked, which the user owns,
// and checks the step against it.
func (a *Service) forkOrigin(ctx context.Context, tx pgx.Tx, p ForkParams) (*Run, error) {
	seen, err := GetForUser(ctx, tx, p.UserID, p.ID)
	if err != nil {
		return nil, err
	}
	orig := seen
	if !seen.IsRoot() {
		if orig, err = GetRun(ctx, tx, seen.RootID); err != nil {
			return nil, err
		}
	}
	if p.Agent != 0 && p.Agent != orig.ID {
		return nil, &FieldError{"agent", fmt.Sprintf("a fork replays the steps of its research's root: give %d or leave agent out "+
			"(a sub-agent's work is replayed with the root's step that read its report)", orig.ID)}
	}
	if p.Step > orig.Steps {
		return nil, &FieldError{"step", fmt.Sprintf("is %d, but research %d has recorded %d steps; give 0 to %d", p.Step, orig.ID, orig.Steps, orig.Steps)}
	}
	return orig, nil
}

// recordedStep is a step of the original's root, as forkSteps reads it.
type recordedStep struct {
	n        int
	messages []llm.Message
	at       time.Time
}

// forkSteps reads the root's steps 1 to n.
func forkSteps(ctx context.Context, tx pgx.Tx, orig *Run, n int) ([]recordedStep, error) {
	rows, err := tx.Query(ctx, `SELECT step, messages, created_at FROM gb_agent_research_steps
		WHERE run_id = $1 AND step <= $2 ORDER BY step`, orig.ID, n)
	if err != nil {
		return nil, fmt.Errorf("error reading the steps of run %d: %w", orig.ID, err)
	}
	steps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (recordedStep, error) {
		var s recordedStep
		err := row.Scan(&s.n, &s.messages, &s.at)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading the steps of run %d: %w", orig.ID, err)
	}
	if len(steps) != n {
		return nil, &FieldError{"step", fmt.Sprintf("research %d has %d of its steps 1 to %d recorded", orig.ID, len(steps), n)}
	}
	return steps, nil
}

// forkPlan is what the replayed steps did that the fork must redo: the
// sub-agents they spawned (in order), those whose result they read, the
// call step N parked on, and whether the root's plan was decided.
type forkPlan struct {
	spawned     []string
	read        map[string]bool
	parkCallID  string
	parkNames   []string
	planDecided bool
	cut         time.Time // when step N was recorded (notes up to it are copied)
}

// analyseFork reads the replayed steps' tool calls and results.
func analyseFork(steps []recordedStep, n int) (*forkPlan, error) {
	plan := &forkPlan{read: map[string]bool{}}
	calls := map[string]llm.ToolCall{}
	answered := map[string]bool{}
	var last []llm.ToolCall // the calls of step N
	for _, s := range steps {
		plan.cut = s.at
		for i, m := range s.messages {
			switch {
			case m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0:
				for _, c := range m.ToolCalls {
					calls[c.ID] = c
					if c.Name == toolSpawnSubagent {
						if name := argName(c, "name"); name != "" {
							plan.spawned = append(plan.spawned, name)
						}
					}
				}
				if s.n == n {
					last = m.ToolCalls
				}
			case m.Role == llm.RoleAssistant && s.n == n && i == len(s.messages)-1:
				return nil, &FieldError{"step", fmt.Sprintf("step %d is the research's report, with nothing after it to run live; "+
					"fork at an earlier step", n)}
			case m.Role == llm.RoleTool:
				answered[m.ToolCallID] = true
				plan.noteRead(calls[m.ToolCallID])
			}
		}
	}
	for _, c := range last {
		if answered[c.ID] {
			continue
		}
		if c.Name != toolWaitSubagents {
			return nil, &FieldError{"step", fmt.Sprintf("step %d waits on %s, which a fork does not replay; fork at step %d or %d",
				n, c.Name, n-1, n+1)}
		}
		plan.parkCallID = c.ID
		var args waitArgs
		_ = json.Unmarshal(c.Arguments, &args)
		plan.parkNames = args.Names
	}
	return plan, nil
}

// noteRead records the sub-agents whose result an answered call gave the
// root: a wait (its names, or every sub-agent spawned so far), a report
// read, a cancel; and whether it decided the plan.
func (plan *forkPlan) noteRead(c llm.ToolCall) {
	switch c.Name {
	case toolWaitSubagents:
		var args waitArgs
		_ = json.Unmarshal(c.Arguments, &args)
		names := args.Names
		if len(names) == 0 {
			names = plan.spawned
		}
		for _, name := range names {
			plan.read[name] = true
		}
	case toolReadReport, toolCancelSubagent:
		if name := argName(c, "name"); name != "" {
			plan.read[name] = true
		}
	case toolProposePlan:
		plan.planDecided = true
	}
}

// argName is a call's string argument key, "" when it has none.
func argName(c llm.ToolCall, key string) string {
	var args map[string]any
	if json.Unmarshal(c.Arguments, &args) != nil {
		return ""
	}
	s, _ := args[key].(string)
	return strings.TrimSpace(s)
}

// forkStartParams are the fork's settings, the original's where p leaves
// them, checked as a start's are.
func (a *Service) forkStartParams(orig *Run, p ForkParams) (StartParams, error) {
	sp := StartParams{UserID: p.UserID, Topic: orig.Topic, Dataset: orig.Dataset, MaxSteps: orig.MaxSteps,
		Citations: orig.CitationsMode, MaxCostUSD: p.MaxCostUSD, MaxTokens: p.MaxTokens}
	if p.MaxSteps != 0 {
		sp.MaxSteps = p.MaxSteps
	}
	if p.Citations != "" {
		sp.Citations = p.Citations
	}
	if sp.MaxCostUSD == 0 && orig.MaxCostUSD != nil {
		sp.MaxCostUSD = *orig.MaxCostUSD
	}
	if sp.MaxTokens == 0 && orig.MaxTokens != nil {
		sp.MaxTokens = *orig.MaxTokens
	}
	if err := sp.Validate(); err != nil {
		return sp, err
	}
	if sp.MaxSteps <= p.Step {
		return sp, &FieldError{"max_steps", fmt.Sprintf("is %d, but the fork replays %d steps: give more than %d", sp.MaxSteps, p.Step, p.Step)}
	}
	return sp, a.checkBudget(sp)
}

// forkNote is the message that gives a fork's first live step its owner's
// instruction, if the fork has one.
func forkNote(run *Run, step int) (llm.Message, bool) {
	if run.ForkInstruction == "" || run.ForkStep == nil || step != *run.ForkStep+1 {
		return llm.Message{}, false
	}
	return llm.Message{Role: llm.RoleUser, Content: "Your owner forked this research from this point and asks you to go on as follows: " +
		run.ForkInstruction}, true
}
