package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// Bounds of StepQuery.
const (
	// StepLimitDefault and StepLimitMax bound the steps of one page.
	StepLimitDefault = 20
	StepLimitMax     = 100
	// StepCharsDefault is where a step's message texts and tool-call
	// arguments are cut, in characters, unless the query asks for another
	// bound (StepCharsMin to StepCharsMax) or for the step whole.
	StepCharsDefault = 2000
	StepCharsMin     = 100
	StepCharsMax     = 20000
)

// ErrNoSuchAgent says a step query named an agent that is not the run or
// one of its descendants.
var ErrNoSuchAgent = errors.New("no such agent in this research")

// StepQuery selects and pages the committed steps of a run's subtree: the
// run and its descendants, or only one of them (Agent).
type StepQuery struct {
	// Run is the run whose subtree is read; its owner was checked.
	Run *Run
	// Agent, when not 0, is the one agent whose steps are read: Run or one
	// of its descendants (else ErrNoSuchAgent).
	Agent int64
	// Step, when not 0, selects the steps of that number.
	Step int
	// After and Before, when not 0, select the steps numbered above After
	// and below Before.
	After, Before int
	// Cursor, when not 0, continues a listing: the NextCursor of the page
	// before, in the same order.
	Cursor int64
	// Asc lists the steps in the order they were committed; by default
	// the newest come first.
	Asc bool
	// Limit is the size of a page (StepLimitDefault when 0, at most
	// StepLimitMax).
	Limit int
	// Chars is where message texts and arguments are cut (StepCharsDefault
	// when 0); Full keeps them whole, and NoMessages leaves them out.
	Chars      int
	Full       bool
	NoMessages bool
}

// StepTokens are the tokens of a step: its model call's and its tools'.
type StepTokens struct {
	Prompt     int `json:"prompt"`
	Cached     int `json:"cached"`
	Completion int `json:"completion"`
	Reasoning  int `json:"reasoning"`
}

// StepToolCall is a tool call the model asked for in a step, with its
// arguments as the model sent them (a JSON object, or the text it sent
// when that was not one).
type StepToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Truncated says Arguments was cut; ArgumentsChars is then its whole
	// length in characters.
	Truncated      bool `json:"truncated,omitempty"`
	ArgumentsChars int  `json:"arguments_chars,omitempty"`
}

// StepMessage is a message a step added to its run's conversation: what
// the model was given before its reply (the topic, a parent's input, the
// answer a parked call waited for), the model's reply with its tool
// calls, each tool's result, and notes gb told the model.
type StepMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []StepToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
	// Truncated says Content was cut; ContentChars is then its whole
	// length in characters.
	Truncated    bool `json:"truncated,omitempty"`
	ContentChars int  `json:"content_chars,omitempty"`
}

// Step is a committed step of an agent: what it added to the conversation
// and what it took.
type Step struct {
	RunID int64 `json:"run_id"`
	// Agent is the agent's name: "root" for the root.
	Agent       string     `json:"agent"`
	Step        int        `json:"step"`
	Model       string     `json:"model"`
	StartedAt   *time.Time `json:"started_at"`
	CommittedAt time.Time  `json:"committed_at"`
	Tokens      StepTokens `json:"tokens"`
	CostUSD     float64    `json:"cost_usd"`
	// ModelMS is how long the model call that answered took; ToolMS how
	// long the step's tools took after it, in milliseconds.
	ModelMS int `json:"model_ms"`
	ToolMS  int `json:"tool_ms"`
	// Retries counts the model calls of the step that did not answer it
	// (refused, rate limited, too large, unusable, cut off), each with
	// the outcome the ledger gave it in RetryOutcomes.
	Retries       int         `json:"retries"`
	RetryOutcomes []string    `json:"retry_outcomes"`
	Compaction    *Compaction `json:"compaction"`
	// Version is the gb version whose code made the step, Behaviour the
	// hash of the behaviour bundle (prompts, types, tool schemas, model
	// profiles, limits) it was made with, shortened; both "" for a step
	// recorded before they were.
	Version   string `json:"version"`
	Behaviour string `json:"behaviour"`
	// Replayed says the step was copied from the research a fork was
	// forked from (fork.go): it made no model call and cost nothing.
	Replayed bool          `json:"replayed"`
	Messages []StepMessage `json:"messages,omitempty"`
	// Truncated says a message text or arguments of the step were cut.
	Truncated bool `json:"truncated"`
	seq       int64
}

// StepPage is a page of steps.
type StepPage struct {
	Steps []Step `json:"steps"`
	// NextCursor continues the listing after the last step of the page,
	// in the same order: with order=asc it also finds the steps committed
	// since. It is empty when the page is empty.
	NextCursor string `json:"next_cursor"`
	// More says more steps matched than the page holds.
	More bool `json:"has_more"`
}

// Steps reads a page of the steps q selects.
func Steps(ctx context.Context, db DB, q StepQuery) (*StepPage, error) {
	ids, err := subtreeIDs(ctx, db, q.Run.ID)
	if err != nil {
		return nil, err
	}
	if q.Agent != 0 {
		if !slices.Contains(ids, q.Agent) {
			return nil, fmt.Errorf("agent %d of research %d: %w", q.Agent, q.Run.ID, ErrNoSuchAgent)
		}
		ids = []int64{q.Agent}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = StepLimitDefault
	}
	limit = min(limit, StepLimitMax)
	rows, err := db.Query(ctx, stepsSQL(q.Asc), ids, q.Step, q.After, q.Before, q.Cursor, limit+1, !q.NoMessages)
	if err != nil {
		return nil, fmt.Errorf("error reading steps: %w", err)
	}
	steps, err := pgx.CollectRows(rows, scanStep)
	if err != nil {
		return nil, fmt.Errorf("error reading steps: %w", err)
	}
	page := &StepPage{Steps: steps}
	if len(steps) > limit {
		page.Steps, page.More = steps[:limit], true
	}
	if n := len(page.Steps); n > 0 {
		page.NextCursor = fmt.Sprint(page.Steps[n-1].seq)
	}
	chars := q.Chars
	if chars <= 0 {
		chars = StepCharsDefault
	}
	for i := range page.Steps {
		if !q.Full {
			page.Steps[i].cut(chars)
		}
	}
	return page, nil
}

// subtreeIDs are the ids of a run and its descendants.
func subtreeIDs(ctx context.Context, db DB, id int64) ([]int64, error) {
	rows, err := db.Query(ctx, `WITH RECURSIVE t AS (
			SELECT id FROM gb_agent_research_runs WHERE id = $1
			UNION ALL SELECT r.id FROM gb_agent_research_runs r JOIN t ON r.parent_id = t.id)
		SELECT id FROM t`, id)
	if err != nil {
		return nil, fmt.Errorf("error reading the agents of research %d: %w", id, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("error reading the agents of research %d: %w", id, err)
	}
	return ids, nil
}

// stepsSQL selects steps: $1 the agents, $2 a step number (0: any), $3 and
// $4 the step numbers above and below (0: no bound), $5 the cursor (a seq;
// 0: none), $6 the most rows, $7 whether to read the messages.
func stepsSQL(asc bool) string {
	cmp, order := "<", "DESC"
	if asc {
		cmp, order = ">", "ASC"
	}
	return `SELECT s.seq, s.run_id, CASE WHEN r.parent_id IS NULL THEN 'root' ELSE r.name END, s.step, s.model,
			s.started_at, s.created_at, s.prompt_tokens, s.cached_tokens, s.completion_tokens, s.reasoning_tokens,
			s.cost_usd::float8, s.model_ms, s.tool_ms, s.retries, s.retry_outcomes, s.compaction,
			s.version, s.behaviour, s.replayed, CASE WHEN $7 THEN s.messages END
		FROM gb_agent_research_steps s JOIN gb_agent_research_runs r ON r.id = s.run_id
		WHERE s.run_id = ANY($1::bigint[]) AND ($2 = 0 OR s.step = $2) AND s.step > $3 AND ($4 = 0 OR s.step < $4)
			AND ($5 = 0 OR s.seq ` + cmp + ` $5)
		ORDER BY s.seq ` + order + ` LIMIT $6`
}

// scanStep reads a row of stepsSQL.
func scanStep(row pgx.CollectableRow) (Step, error) {
	var s Step
	var msgs []llm.Message
	err := row.Scan(&s.seq, &s.RunID, &s.Agent, &s.Step, &s.Model, &s.StartedAt, &s.CommittedAt,
		&s.Tokens.Prompt, &s.Tokens.Cached, &s.Tokens.Completion, &s.Tokens.Reasoning, &s.CostUSD,
		&s.ModelMS, &s.ToolMS, &s.Retries, &s.RetryOutcomes, &s.Compaction, &s.Version, &s.Behaviour, &s.Replayed, &msgs)
	if err != nil {
		return s, err
	}
	s.Behaviour = ShortHash(s.Behaviour)
	if s.RetryOutcomes == nil {
		s.RetryOutcomes = []string{}
	}
	s.Messages = make([]StepMessage, 0, len(msgs))
	for _, m := range msgs {
		s.Messages = append(s.Messages, stepMessage(m))
	}
	if msgs == nil {
		s.Messages = nil
	}
	return s, nil
}

// stepMessage is a stored message as a step shows it.
func stepMessage(m llm.Message) StepMessage {
	out := StepMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
	for _, c := range m.ToolCalls {
		args := c.InvalidArguments
		if len(c.Arguments) > 0 && string(c.Arguments) != "null" {
			args = compactJSON(c.Arguments)
		}
		out.ToolCalls = append(out.ToolCalls, StepToolCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return out
}

// compactJSON is raw JSON without insignificant space, its keys in the
// order the model wrote them.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// cut cuts the step's message texts and arguments at n characters.
func (s *Step) cut(n int) {
	for i := range s.Messages {
		m := &s.Messages[i]
		if c := utf8.RuneCountInString(m.Content); c > n {
			m.Content, m.Truncated, m.ContentChars = truncateRunes(m.Content, n), true, c
			s.Truncated = true
		}
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			if c := utf8.RuneCountInString(tc.Arguments); c > n {
				tc.Arguments, tc.Truncated, tc.ArgumentsChars = truncateRunes(tc.Arguments, n), true, c
				s.Truncated = true
			}
		}
	}
}
