package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gbresearch/gb/jobs"
)

const pollEvery = 250 * time.Millisecond

func cmdResearch(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: gb research start|list|get|tree|events|messages|send|cancel|delete ...")
	}
	c, err := newAPIClient()
	if err != nil {
		return err
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "start":
		return researchStart(ctx, c, rest, out)
	case "list":
		return researchList(ctx, c, rest, out)
	case "get":
		id, err := oneID("get", rest)
		if err != nil {
			return err
		}
		var d json.RawMessage
		if err := c.do(ctx, "GET", "/v1/gb/research/"+id, nil, &d); err != nil {
			return err
		}
		_, err = out.Write(append(d, '\n'))
		return err
	case "tree":
		return researchTree(ctx, c, rest, out)
	case "events":
		return researchEvents(ctx, c, rest, out)
	case "messages":
		return researchMessages(ctx, c, rest, out)
	case "send":
		pos, err := parseArgs(flag.NewFlagSet("research send", flag.ContinueOnError), rest, 2, 2, "ID TEXT")
		if err != nil {
			return err
		}
		if err := c.do(ctx, "POST", "/v1/gb/research/"+pos[0]+"/messages", map[string]string{"text": pos[1]}, nil); err != nil {
			return err
		}
		fmt.Fprintf(out, "message delivered to run %s\n", pos[0])
		return nil
	case "cancel":
		id, err := oneID("cancel", rest)
		if err != nil {
			return err
		}
		var run jobs.Run
		if err := c.do(ctx, "POST", "/v1/gb/research/"+id+"/cancel", nil, &run); err != nil {
			return err
		}
		fmt.Fprintf(out, "run %d: %s %s\n", run.ID, run.Status, run.Error)
		return nil
	case "delete":
		id, err := oneID("delete", rest)
		if err != nil {
			return err
		}
		if err := c.do(ctx, "DELETE", "/v1/gb/research/"+id, nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(out, "deleted run %s and its sub-agents\n", id)
		return nil
	default:
		return fmt.Errorf("unknown research command %q; use start, list, get, tree, events, messages, send, cancel or delete", sub)
	}
}

func oneID(name string, args []string) (string, error) {
	pos, err := parseArgs(flag.NewFlagSet("research "+name, flag.ContinueOnError), args, 1, 1, "ID")
	if err != nil {
		return "", err
	}
	if _, err := strconv.ParseInt(pos[0], 10, 64); err != nil {
		return "", fmt.Errorf("%q is not a run id (a number)", pos[0])
	}
	return pos[0], nil
}

func researchStart(ctx context.Context, c *apiClient, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("research start", flag.ContinueOnError)
	followFlag := fs.Bool("follow", false, "print progress until the research ends, then its report")
	maxSteps := fs.Int("max-steps", 0, "most model calls of the root agent (1-40, default 10)")
	dataset := fs.String("dataset", "", "knowledge base to research (default godoc)")
	maxCost := fs.Float64("max-cost-usd", 0, "budget of the whole tree in dollars")
	maxTokens := fs.Int64("max-tokens", 0, "budget of the whole tree in tokens")
	pos, err := parseArgs(fs, args, 1, 1, `"TOPIC" [--follow] [--max-steps N] [--dataset NAME]`)
	if err != nil {
		return err
	}
	body := map[string]any{"topic": pos[0]}
	if *maxSteps != 0 {
		body["max_steps"] = *maxSteps
	}
	if *dataset != "" {
		body["dataset"] = *dataset
	}
	if *maxCost != 0 {
		body["max_cost_usd"] = *maxCost
	}
	if *maxTokens != 0 {
		body["max_tokens"] = *maxTokens
	}
	var run jobs.Run
	if err := c.do(ctx, "POST", "/v1/gb/research", body, &run); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d\n", run.ID)
	if !*followFlag {
		return nil
	}
	fmt.Fprintf(out, "model: %s\n", run.Model)
	return follow(ctx, c, run.ID, out)
}

// follow prints a line each time the tree of a run changes, then the report.
func follow(ctx context.Context, c *apiClient, id int64, out io.Writer) error {
	last := ""
	for {
		var d jobs.RunDetails
		if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d", id), nil, &d); err != nil {
			return err
		}
		line := fmt.Sprintf("[run %d] %s · %s · step %d/%d · %d tokens", d.ID, d.Status, d.State, d.Steps, d.MaxSteps, d.Tokens)
		if len(d.Subagents) > 0 {
			line += fmt.Sprintf(" · sub-agents %d (%d working) · tree %d tokens $%.4f",
				len(d.Subagents), d.Tree.Working-boolInt(!d.Ended()), d.Tree.Tokens, d.Tree.CostUSD)
		}
		if line != last {
			fmt.Fprintln(out, line)
			last = line
		}
		if d.Ended() {
			if d.Status == jobs.StatusFailed {
				return fmt.Errorf("research %d failed: %s", d.ID, d.Error)
			}
			fmt.Fprintf(out, "\n%s\n", d.Report)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func researchList(ctx context.Context, c *apiClient, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("research list", flag.ContinueOnError)
	status := fs.String("status", "", "only runs with this status")
	parent := fs.String("parent", "", "only the sub-agents of this run")
	limit := fs.Int("limit", 20, "runs per page (1-100)")
	cursor := fs.String("cursor", "", "next_cursor of the previous page")
	if _, err := parseArgs(fs, args, 0, 0, "[--status S] [--parent ID] [--limit N] [--cursor C]"); err != nil {
		return err
	}
	q := url.Values{}
	for k, v := range map[string]string{"status": *status, "parent_id": *parent, "cursor": *cursor, "limit": strconv.Itoa(*limit)} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var page struct {
		Runs       []jobs.Run `json:"runs"`
		NextCursor string     `json:"next_cursor"`
	}
	if err := c.do(ctx, "GET", "/v1/gb/research?"+q.Encode(), nil, &page); err != nil {
		return err
	}
	fmt.Fprintf(out, "%-6s %-7s %-10s %-10s %-7s %-8s %s\n", "ID", "PARENT", "STATUS", "STATE", "STEPS", "TOKENS", "NAME / TOPIC")
	for _, r := range page.Runs {
		parent := "-"
		if r.ParentID != nil {
			parent = strconv.FormatInt(*r.ParentID, 10)
		}
		label := r.Topic
		if r.Name != "" {
			label = r.Name + ": " + r.Topic
		}
		fmt.Fprintf(out, "%-6d %-7s %-10s %-10s %-7s %-8d %s\n", r.ID, parent, r.Status, r.State,
			fmt.Sprintf("%d/%d", r.Steps, r.MaxSteps), r.Tokens, clip(label, 70))
	}
	if page.NextCursor != "" {
		fmt.Fprintf(out, "more: gb research list --cursor %s\n", page.NextCursor)
	}
	return nil
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
