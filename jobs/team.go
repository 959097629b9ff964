package jobs

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// Limits of a research tree, checked in the transaction that would break them.
const (
	// MaxSubagentsPerAgent bounds the sub-agents one agent may spawn.
	MaxSubagentsPerAgent = 5
	// MaxSubagentsPerTree bounds the sub-agents of a whole research.
	MaxSubagentsPerTree = 10
	// MaxSubagentDepth is the number of generations of sub-agents: a root
	// spawns depth 1, which may spawn depth 2, which gets no spawn tool.
	MaxSubagentDepth = 2
	// DefaultMaxSteps is the step budget of an agent that names none.
	DefaultMaxSteps = 10
	// MaxMaxSteps is the largest step budget an agent may have.
	MaxMaxSteps = 40
	// MaxNameLen, MaxReasonLen and MaxTaskLen bound spawn_subagent's input.
	MaxNameLen   = 40
	MaxReasonLen = 300
	MaxTaskLen   = 2000
)

// CancelledByParent is the error of a sub-agent ended because the agent
// that spawned it ended.
const CancelledByParent = "cancelled: the agent that spawned it ended"

var nameRE = regexp.MustCompile(fmt.Sprintf(`^[A-Za-z0-9_-]{1,%d}$`, MaxNameLen))

// SpawnParams are the inputs of a spawn, decoded from spawn_subagent's
// arguments and declared as they are (toolargs.go): the maxes are
// MaxNameLen, MaxReasonLen, MaxTaskLen and MaxMaxSteps, the default step
// budget DefaultMaxSteps.
type SpawnParams struct {
	Name     string `json:"name" desc:"letters, digits, - or _; unique among your sub-agents" trim:"true" min:"1" max:"40" check:"tool"`
	Reason   string `json:"reason" desc:"why this sub-agent has to exist, in one sentence" trim:"true" max:"300"`
	Task     string `json:"task" desc:"a self-contained task that says what to bring back" trim:"true" max:"2000"`
	MaxSteps int    `json:"max_steps" desc:"its step budget" optional:"true" min:"1" max:"40" default:"10"`
	// Type names the sub-agent's type (DefaultType when empty).
	Type string `json:"type,omitempty" desc:"the sub-agent's type" optional:"true"`
	// Model names the sub-agent's model, one the operator allows (its
	// parent's when empty).
	Model string `json:"model,omitempty" desc:"the sub-agent's model (default: yours)" optional:"true"`
}

// check applies the declaration (trims the texts, checks their lengths in
// characters and the step budget, fills its default) and checks what it
// cannot say: the name's letters, a reason and a task given. A refusal
// is a toolError.
func (p *SpawnParams) check() error {
	if err := checkFields(p); err != nil {
		return err
	}
	switch {
	case !nameRE.MatchString(p.Name):
		return toolErrorf("name must be 1 to %d letters, digits, - or _ (got %q)", MaxNameLen, p.Name)
	case p.Reason == "":
		return toolErrorf("reason is required: say in one sentence why this sub-agent has to exist, " +
			"what it covers that you cannot cover cheaply yourself; if you cannot, do not spawn it and do the work yourself")
	case p.Task == "":
		return toolErrorf("task is required: a self-contained task that says what to bring back")
	}
	return nil
}

// spawn checks the spawn's input and the tree's limits with the root row
// locked (the caller's transaction holds it), then inserts the child run,
// its inbox and its first step job. A refused spawn is a toolError.
func (a *Service) spawn(ctx context.Context, tx pgx.Tx, parent *Run, p SpawnParams) (*Run, error) {
	if parent.Depth >= MaxSubagentDepth {
		return nil, toolErrorf("you cannot spawn sub-agents: the tree allows %d generations of sub-agents", MaxSubagentDepth)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	var mine, inTree int
	var taken bool
	// The parent's sub-agents, the tree's, and whether the parent has one
	// named p.Name already.
	err := tx.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE parent_id = $1),
			count(*) FILTER (WHERE parent_id IS NOT NULL),
			coalesce(bool_or(parent_id = $1 AND name = $3), false)
		FROM gb_agent_research_runs WHERE root_id = $2`, parent.ID, parent.RootID, p.Name).
		Scan(&mine, &inTree, &taken)
	if err != nil {
		return nil, fmt.Errorf("error counting sub-agents: %w", err)
	}
	switch {
	case taken:
		return nil, toolErrorf("you already have a sub-agent named %q; pick another name", p.Name)
	case mine >= MaxSubagentsPerAgent:
		return nil, toolErrorf("limit reached: an agent may spawn at most %d sub-agents", MaxSubagentsPerAgent)
	case inTree >= parent.MaxSubagents:
		return nil, toolErrorf("limit reached: this research may have at most %d sub-agents in all", parent.MaxSubagents)
	}
	at, err := a.spawnType(parent, p.Type)
	if err != nil {
		return nil, err
	}
	model := parent.Model
	if p.Model != "" {
		if a.modelNamed(p.Model) == nil {
			return nil, toolErrorf("model %q is not allowed; the models are: %s", p.Model, strings.Join(a.modelNames(), ", "))
		}
		model = p.Model
	}
	var deadline *time.Time
	if at.WallClock > 0 {
		d := time.Now().Add(at.WallClock)
		deadline = &d
	}
	child, err := oneRun(tx.Query(ctx, insertSubagentSQL, pgx.NamedArgs{
		"user": parent.UserID, "parent": parent.ID, "root": parent.RootID, "depth": parent.Depth + 1,
		"name": p.Name, "reason": p.Reason, "topic": p.Task, "model": model, "dataset": parent.Dataset,
		"max_steps": min(p.MaxSteps, at.MaxSteps), "agent_type": at.Name, "deadline": deadline,
		"max_subagents": parent.MaxSubagents, "tree_started_at": parent.TreeStartedAt,
		"pinned": a.childPin(parent)}))
	if err != nil {
		return nil, fmt.Errorf("error inserting sub-agent: %w", err)
	}
	if deadline != nil {
		if err := a.enqueueTimeout(ctx, tx, child.ID, *deadline); err != nil {
			return nil, err
		}
	}
	if err := a.openInbox(ctx, tx, child.ID); err != nil {
		return nil, err
	}
	if err := a.traceRun(ctx, tx, child); err != nil {
		return nil, err
	}
	if err := a.enqueueStep(ctx, tx, child, 1); err != nil {
		return nil, err
	}
	if err := addEvent(ctx, tx, child, EventSpawned, map[string]any{"name": child.Name, "reason": child.Reason}); err != nil {
		return nil, err
	}
	return child, nil
}

// parkRequest is a call that must wait: a wait_subagents call for names,
// a read_messages call (messages) until a message or until, or an
// ask_owner call (question) until an answer or until.
type parkRequest struct {
	callID   string
	names    []string
	messages bool
	question string
	plan     []SpawnParams
	until    time.Time
}

// what says what the parked call waits for, for a refusal to wait twice.
func (p *parkRequest) what() string {
	switch {
	case p.messages:
		return "read_messages"
	case p.question != "":
		return "ask_owner"
	case p.plan != nil:
		return "propose_plan"
	}
	return "wait_subagents"
}

// awaitedChildren resolves wait_subagents' names to sub-agents of run.
func awaitedChildren(ctx context.Context, db DB, run *Run, names []string) ([]*Run, error) {
	kids, err := children(ctx, db, run.ID)
	if err != nil {
		return nil, err
	}
	return awaitedOf(kids, names)
}

// awaitedOf is awaitedChildren of the sub-agents kids, oldest first.
func awaitedOf(kids []*Run, names []string) ([]*Run, error) {
	if len(kids) == 0 {
		return nil, toolErrorf("you have no sub-agents to wait for")
	}
	if len(names) == 0 {
		return kids, nil
	}
	byName := map[string]*Run{}
	var have []string
	for _, k := range kids {
		byName[k.Name] = k
		have = append(have, k.Name)
	}
	var out []*Run
	for _, n := range names {
		k, ok := byName[n]
		if !ok {
			return nil, toolErrorf("%q is not one of your sub-agents; you have: %s", n, strings.Join(have, ", "))
		}
		out = append(out, k)
	}
	return out, nil
}

// formatReports renders the result of wait_subagents: each sub-agent's
// status and its report, or its error, each report cut to max characters
// with a line that says how to read the rest (read_report).
func formatReports(runs []*Run, max int) string {
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "## %s (run %d): %s\n", r.Name, r.ID, r.Status)
		if r.Status == StatusSucceeded {
			part, left := pageSlice(r.Report, 0, max)
			b.WriteString(part)
			if left > 0 {
				fmt.Fprintf(&b, "\n[%d more characters of this report left out: call read_report with "+
					"{\"name\": %q, \"offset\": %d} to read on]", left, r.Name, utf8.RuneCountInString(part))
			}
		} else {
			b.WriteString("error: " + r.Error)
		}
		b.WriteString("\n\n")
	}
	return strings.TrimSpace(b.String())
}

// resumeResult is the tool result that answers the call a parked run waited
// on, computed when it resumes, and the ids of the messages it delivers,
// which the step's commit marks read.
func (a *Service) resumeResult(ctx context.Context, db DB, run *Run) (llm.Message, []int64, error) {
	if run.waitsForMessages() {
		return a.messageWaitResult(ctx, db, run)
	}
	if run.waitsForOwner() {
		msg, err := ownerResult(ctx, db, run)
		return msg, nil, err
	}
	result, err := a.waitResult(ctx, db, run, run.WaitNames)
	if err != nil {
		return llm.Message{}, nil, err
	}
	return llm.Message{Role: llm.RoleTool, ToolCallID: run.WaitCallID, Name: toolWaitSubagents, Content: result}, nil, nil
}

// waitResult is the result of a parked wait, computed when the run resumes.
func (a *Service) waitResult(ctx context.Context, db DB, run *Run, names []string) (string, error) {
	awaited, err := awaitedChildren(ctx, db, run, names)
	if err != nil {
		if te, ok := err.(*toolError); ok {
			return "Error: " + te.msg, nil
		}
		return "", err
	}
	return a.untrustedReports(awaited, a.limitsFor(run).MaxReportChars), nil
}

// park makes the run wait for sub-agents, for messages or for its owner's
// answer: no job, no worker. The transaction that ends the last awaited
// sub-agent inserts its next step; a message wait resumes as
// message_wait.go says, a question as owner_wait.go says.
func (a *Service) park(ctx context.Context, tx pgx.Tx, run *Run, p *parkRequest) error {
	if p.messages {
		return a.parkForMessages(ctx, tx, run, p)
	}
	if p.question != "" || p.plan != nil {
		return a.parkForOwner(ctx, tx, run, p)
	}
	names := p.names
	if names == nil {
		names = []string{}
	}
	// Park the run on names (none: all its sub-agents) for the call p.callID.
	_, err := tx.Exec(ctx, `UPDATE gb_agent_research_runs
		SET status = 'waiting', state = 'waiting', wait_names = $2, wait_call_id = $3,
		    wait_kind = 'subagents', wait_until = NULL, updated_at = now()
		WHERE id = $1`, run.ID, names, p.callID)
	if err != nil {
		return fmt.Errorf("error parking run %d: %w", run.ID, err)
	}
	if err := addState(ctx, tx, run.ID, StateWaiting, run.Steps); err != nil {
		return err
	}
	if err := addEvent(ctx, tx, run, EventWaiting, map[string]any{"names": names}); err != nil {
		return err
	}
	// A tool of this same step may have ended the awaited sub-agents (a
	// cancel_subagent after the wait): check again now the run is parked.
	return a.maybeResume(ctx, tx, run.ID)
}

// maybeResume inserts the resume job of a parked parent when every
// sub-agent it waits for has ended. The parent's row lock and its status
// change make it happen once, however many children end at once. A parent
// parked on read_messages or ask_owner is left to its messages or its
// owner, and its deadline.
func (a *Service) maybeResume(ctx context.Context, tx pgx.Tx, parentID int64) error {
	parent, err := lockRun(ctx, tx, parentID)
	if err != nil {
		return err
	}
	if parent.Status != StatusWaiting || parent.WaitKind != waitSubagents {
		return nil
	}
	awaited, err := awaitedChildren(ctx, tx, parent, parent.WaitNames)
	return a.resumeIfDone(ctx, tx, parent, awaited, err)
}

// maybeResumeAfter is maybeResume for the parent of run, which this
// transaction ended, when the tree was read with its root's lock (tree,
// deepest first): the parent and its sub-agents are read from it, with
// no round trip, since every writer of the tree waits for that lock.
// Without the tree, or a parent in it, it is maybeResume.
func (a *Service) maybeResumeAfter(ctx context.Context, tx pgx.Tx, run *Run, tree []*Run) error {
	var parent *Run
	var kids []*Run
	for _, r := range tree {
		switch {
		case r.ID == run.ID:
			kids = append(kids, run) // as this transaction left it
		case r.ID == *run.ParentID:
			parent = r
		case r.ParentID != nil && *r.ParentID == *run.ParentID:
			kids = append(kids, r)
		}
	}
	if parent == nil {
		return a.maybeResume(ctx, tx, *run.ParentID)
	}
	if parent.Status != StatusWaiting || parent.WaitKind != waitSubagents {
		return nil
	}
	slices.SortFunc(kids, func(x, y *Run) int { return cmp.Compare(x.ID, y.ID) })
	awaited, err := awaitedOf(kids, parent.WaitNames)
	return a.resumeIfDone(ctx, tx, parent, awaited, err)
}

// resumeIfDone resumes parent, parked on its sub-agents, when every one
// it awaits (awaited, or an error finding them) has ended.
func (a *Service) resumeIfDone(ctx context.Context, tx pgx.Tx, parent *Run, awaited []*Run, err error) error {
	if err != nil {
		if _, ok := err.(*toolError); !ok {
			return err
		}
	}
	for _, c := range awaited {
		if !c.Ended() {
			return nil
		}
	}
	// Resume the parent: its next step job follows.
	if _, err := tx.Exec(ctx, `UPDATE gb_agent_research_runs SET status = 'working', state = 'thinking', updated_at = now()
		WHERE id = $1`, parent.ID); err != nil {
		return fmt.Errorf("error resuming run %d: %w", parent.ID, err)
	}
	// Its state history says so, as a resume by a message or an answer does.
	if err := addState(ctx, tx, parent.ID, StateThinking, parent.Steps+1); err != nil {
		return err
	}
	if err := addEvent(ctx, tx, parent, EventResumed, nil); err != nil {
		return err
	}
	return a.enqueueStep(ctx, tx, parent, parent.Steps+1)
}
