package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs"
)

// Bounds of the MCP tools' answers: a page holds mcpPageDefault items
// unless the call asks for up to mcpPageMax, and each text in it is cut at
// mcpTextMax characters (mcpMessageMax for a message's text), so that an
// answer stays small in a model's context whatever the tree's size.
const (
	mcpPageDefault   = 20
	mcpPageMax       = 100
	mcpEventsDefault = 30
	mcpEventsMax     = 200
	mcpTextMax       = 300
	mcpMessageMax    = 1000
)

// Inputs of the paged tools.
type (
	mcpTreeInput struct {
		ID     int64  `json:"id" jsonschema:"the run id"`
		Limit  int    `json:"limit,omitempty" jsonschema:"agents per page, 1 to 100 (default 20)"`
		Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
	}
	mcpMessagesInput struct {
		ID     int64  `json:"id" jsonschema:"the run id"`
		Limit  int    `json:"limit,omitempty" jsonschema:"messages per page, 1 to 100 (default 20)"`
		Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
	}
)

// mcpAgent is a run as a page of the MCP tools shows it: its identity,
// where it stands and its usage, texts cut, without its report (read it
// with get_research or the gb://research/{id}/report resource).
type mcpAgent struct {
	ID              int64   `json:"id"`
	ParentID        *int64  `json:"parent_id,omitempty"`
	Name            string  `json:"name"`
	Topic           string  `json:"topic,omitempty"`
	Reason          string  `json:"reason,omitempty"`
	AgentType       string  `json:"agent_type,omitempty"`
	Status          string  `json:"status"`
	State           string  `json:"state"`
	Steps           int     `json:"steps"`
	MaxSteps        int     `json:"max_steps"`
	Tokens          int64   `json:"tokens"`
	CachedTokens    int64   `json:"cached_tokens"`
	ReasoningTokens int64   `json:"reasoning_tokens"`
	CostUSD         float64 `json:"cost_usd"`
	Error           string  `json:"error,omitempty"`
	Question        string  `json:"question,omitempty"`
	CreatedAt       string  `json:"created_at"`
	EndedAt         string  `json:"ended_at,omitempty"`
	HasReport       bool    `json:"has_report,omitempty"`
	ReportResource  string  `json:"report_resource,omitempty"`
}

// agentOf is the page entry of r; withTopic keeps the topic (a root's).
func agentOf(r *jobs.Run, withTopic bool) mcpAgent {
	a := mcpAgent{ID: r.ID, ParentID: r.ParentID, Name: agentName(r), Reason: cut(r.Reason, mcpTextMax),
		AgentType: r.AgentType, Status: r.Status, State: r.State, Steps: r.Steps, MaxSteps: r.MaxSteps, Tokens: r.Tokens,
		CachedTokens: r.CachedTokens, ReasoningTokens: r.ReasoningTokens, CostUSD: r.CostUSD,
		Error: cut(r.Error, mcpTextMax), Question: cut(r.Question, mcpTextMax), CreatedAt: r.CreatedAt.Format(timeFormat)}
	if withTopic {
		a.Topic = cut(r.Topic, mcpTextMax)
	}
	if r.EndedAt != nil {
		a.EndedAt = r.EndedAt.Format(timeFormat)
	}
	if r.Status == jobs.StatusSucceeded {
		a.HasReport, a.ReportResource = true, reportURI(r.ID)
	}
	return a
}

const timeFormat = "2006-01-02T15:04:05Z07:00"

// cut cuts s at n characters, ending with "…" when cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// pageOf is the page of items from cursor (an offset; "" is 0) of at most
// limit items (0: def; above most: an error), and the cursor of the next
// page ("" on the last).
func pageOf[T any](items []T, cursor string, limit, def, most int) ([]T, string, error) {
	if limit < 0 || limit > most {
		return nil, "", fmt.Errorf("limit must be 1 to %d (got %d)", most, limit)
	}
	limit = cmp.Or(limit, def)
	from := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || n > len(items) {
			return nil, "", fmt.Errorf("cursor %q is not the next_cursor of a previous page", cursor)
		}
		from = n
	}
	to := min(from+limit, len(items))
	next := ""
	if to < len(items) {
		next = strconv.Itoa(to)
	}
	return items[from:to], next, nil
}

// mcpTreePage is a page of the agents of id's tree, by depth, with the tree's
// totals.
func mcpTreePage(ctx context.Context, c *apiClient, in mcpTreeInput) (mcpOut, error) {
	if err := checkID(in.ID); err != nil {
		return nil, err
	}
	t, err := getTree(ctx, c, in.ID)
	if err != nil {
		return nil, err
	}
	runs, next, err := pageOf(t.Runs, in.Cursor, in.Limit, mcpPageDefault, mcpPageMax)
	if err != nil {
		return nil, err
	}
	agents := make([]mcpAgent, len(runs))
	for i, r := range runs {
		agents[i] = agentOf(r, r.ParentID == nil)
	}
	return withCursor(mcpOut{"runs": agents, "totals": t.Totals}, next), nil
}

// mcpListPage is a page of the user's runs, without reports.
func mcpListPage(ctx context.Context, c *apiClient, in mcpListInput) (mcpOut, error) {
	if in.Status != "" && !slices.Contains(jobs.ListStatuses, in.Status) {
		return nil, fmt.Errorf("status %q is not one of %v", in.Status, jobs.ListStatuses)
	}
	if in.Limit < 0 || in.Limit > jobs.MaxListLimit {
		return nil, fmt.Errorf("limit must be 1 to %d (got %d)", jobs.MaxListLimit, in.Limit)
	}
	q := url.Values{"limit": {strconv.Itoa(cmp.Or(in.Limit, mcpPageDefault))}}
	for k, v := range map[string]string{"status": in.Status, "cursor": in.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if in.ParentID != 0 {
		q.Set("parent_id", strconv.FormatInt(in.ParentID, 10))
	}
	var page listPage
	if err := c.do(ctx, "GET", "/v1/gb/research?"+q.Encode(), nil, &page); err != nil {
		return nil, err
	}
	runs := make([]mcpAgent, len(page.Runs))
	for i := range page.Runs {
		runs[i] = agentOf(&page.Runs[i], true)
	}
	return withCursor(mcpOut{"runs": runs}, page.NextCursor), nil
}

// mcpEventsPage is at most limit events of id's tree after in.After (waiting
// up to in.Wait seconds for one), their data's texts cut.
func mcpEventsPage(ctx context.Context, c *apiClient, in mcpEventsInput) (mcpOut, error) {
	if err := checkID(in.ID); err != nil {
		return nil, err
	}
	if in.Limit < 0 || in.Limit > mcpEventsMax {
		return nil, fmt.Errorf("limit must be 1 to %d (got %d)", mcpEventsMax, in.Limit)
	}
	p, err := pollEvents(ctx, c, in.ID, in.After, in.Wait)
	if err != nil {
		return nil, err
	}
	evs := p.Events
	more := len(evs) > cmp.Or(in.Limit, mcpEventsDefault)
	if more {
		evs = evs[:cmp.Or(in.Limit, mcpEventsDefault)]
	}
	next := in.After
	out := make([]map[string]any, len(evs))
	for i, e := range evs {
		var data any
		_ = json.Unmarshal(e.Data, &data)
		out[i] = map[string]any{"n": e.N, "seq": e.Seq, "run_id": e.RunID, "agent": e.Agent, "kind": e.Kind,
			"at": e.At.Format(timeFormat), "data": cutTexts(data, mcpTextMax)}
		next = e.Seq
	}
	return mcpOut{"events": out, "next_after": next, "more": more}, nil
}

// cutTexts cuts every string in a JSON value at n characters.
func cutTexts(v any, n int) any {
	switch x := v.(type) {
	case string:
		return cut(x, n)
	case map[string]any:
		for k, e := range x {
			x[k] = cutTexts(e, n)
		}
	case []any:
		for i, e := range x {
			x[i] = cutTexts(e, n)
		}
	}
	return v
}

// mcpMessagesPage is a page of the messages of id's tree, oldest first,
// each text cut at mcpMessageMax characters.
func mcpMessagesPage(ctx context.Context, c *apiClient, in mcpMessagesInput) (mcpOut, error) {
	if err := checkID(in.ID); err != nil {
		return nil, err
	}
	var p messagesPage
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/messages", in.ID), nil, &p); err != nil {
		return nil, err
	}
	msgs, next, err := pageOf(p.Messages, in.Cursor, in.Limit, mcpPageDefault, mcpPageMax)
	if err != nil {
		return nil, err
	}
	for i := range msgs {
		msgs[i].Text = cut(msgs[i].Text, mcpMessageMax)
	}
	return withCursor(mcpOut{"messages": msgs}, next), nil
}

// mcpSourcesPage is a page of the sources of a run (or of its tree).
func mcpSourcesPage(ctx context.Context, c *apiClient, in mcpSourcesInput) (mcpOut, error) {
	if err := checkID(in.ID); err != nil {
		return nil, err
	}
	var p struct {
		Sources []map[string]any `json:"sources"`
	}
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/sources?tree=%t", in.ID, in.Tree), nil, &p); err != nil {
		return nil, err
	}
	srcs, next, err := pageOf(p.Sources, in.Cursor, in.Limit, mcpPageDefault, mcpPageMax)
	if err != nil {
		return nil, err
	}
	for _, s := range srcs {
		cutTexts(s, mcpTextMax)
	}
	return withCursor(mcpOut{"sources": srcs}, next), nil
}

// withCursor adds next_cursor to a page that has a next one.
func withCursor(out mcpOut, next string) mcpOut {
	if next != "" {
		out["next_cursor"] = next
	}
	return out
}
