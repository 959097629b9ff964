package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gbresearch/gb/jobs"
)

// followRun prints the events of a run's tree as they happen (long polls,
// woken as soon as an event lands), then its report once every agent has
// ended. A research that failed is an error.
func followRun(ctx context.Context, c *apiClient, id int64, out io.Writer) error {
	header := true
	err := watchTree(ctx, c, id, 0, func(evs []jobs.Event) error {
		err := printEventsFixed(out, evs, header)
		header = false
		printQuestions(out, evs)
		printProviderWaits(out, evs)
		printPlans(out, evs)
		return err
	})
	if err != nil {
		return err
	}
	var d jobs.RunDetails
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d", id), nil, &d); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n[run %d] %s · %d/%d steps · tree: %s · %s%s · $%.4f%s · %s\n", d.ID, d.Status,
		d.Steps, d.MaxSteps, count(d.Tree.Runs, "agent"), count(d.Tree.Tokens, "token"), tokenParts(d.Tree.CachedTokens, d.Tree.ReasoningTokens),
		d.Tree.CostUSD, estimatedNote(d.Tree.EstimatedCalls), d.Elapsed)
	if d.Status == jobs.StatusFailed || d.Status == jobs.StatusTimedOut {
		return fmt.Errorf("research %d %s: %s", d.ID, d.Status, d.Error)
	}
	fmt.Fprintf(out, "\n%s\n", printable(d.Report))
	return nil
}
