package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gbresearch/gb/jobs"
)

// Bounds of a wait for a research (wait_research, start_research's
// wait_seconds).
const (
	mcpWaitDefault = 120 * time.Second
	mcpWaitMax     = 600 * time.Second
)

type mcpWaitInput struct {
	ID             int64 `json:"id" jsonschema:"the run id"`
	TimeoutSeconds int   `json:"timeout_seconds,omitempty" jsonschema:"most seconds to wait, 1 to 600 (default 120)"`
}

// waitTimeout is the wait of seconds (0: the default), checked.
func waitTimeout(seconds int) (time.Duration, error) {
	d := time.Duration(seconds) * time.Second
	switch {
	case seconds == 0:
		return mcpWaitDefault, nil
	case seconds < 0 || d > mcpWaitMax:
		return 0, fmt.Errorf("the wait must be 1 to %d seconds (got %d)", int(mcpWaitMax/time.Second), seconds)
	}
	return d, nil
}

// waitResearch follows the events of id's tree until every agent has ended
// or the wait is over. When the call carries a progress token, each event
// is a progress notification: its number in the tree as the progress, and
// what happened as the message. It answers where the research stands.
func waitResearch(ctx context.Context, c *apiClient, req *mcp.CallToolRequest, id int64, wait time.Duration) (mcpOut, error) {
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var seen int64
	err := followTree(wctx, c, id, 0, func(evs []jobs.Event) error {
		for _, e := range evs {
			seen = e.N
			if token == nil {
				continue
			}
			msg := cut(fmt.Sprintf("%s %s %s", oneLine(e.Agent), e.Kind, oneLine(eventDetail(e.Data))), mcpTextMax)
			if err := req.Session.NotifyProgress(wctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: float64(e.N), Message: msg}); err != nil {
				return fmt.Errorf("sending progress: %w", err)
			}
		}
		return nil
	})
	if err != nil && !(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) {
		return nil, err
	}
	var d jobs.RunDetails
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d", id), nil, &d); err != nil {
		return nil, err
	}
	out := mcpOut{"id": d.ID, "status": d.Status, "state": d.State, "ended": d.Ended() && d.Tree.Working == 0,
		"events": seen, "tree": d.Tree, "resource": researchURI(d.ID)}
	if d.Error != "" {
		out["error"] = cut(d.Error, mcpTextMax)
	}
	if d.Question != "" {
		out["question"] = d.Question
	}
	if d.ProviderWait != nil && d.State == jobs.StateWaitingProvider {
		out["provider_wait"] = d.ProviderWait // its provider is down: the last error and the next try
	}
	if d.Status == jobs.StatusSucceeded {
		out["report_resource"] = reportURI(d.ID)
	}
	return out, nil
}
