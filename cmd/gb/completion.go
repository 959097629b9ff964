package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gbresearch/gb/jobs"
)

// completeRecentRuns is how many of the user's newest runs a completion
// of a run id offers.
const completeRecentRuns = 50

// flagValues are the values a flag of this name takes, wherever it is, for
// shell completion. A flag whose name means a run id completes run ids.
var flagValues = map[string][]string{
	"output":    {"table", "json"},
	"status":    jobs.ListStatuses,
	"citations": jobs.CitationsModes,
	"order":     {"desc", "asc"},
	"messenger": {messengerPostgres, messengerMemory},
	"pin":       {jobs.PinRun, jobs.PinLatest},
}

// runIDFlags are the flags that take run ids.
var runIDFlags = map[string]bool{"parent": true, "run": true, "notes-from": true, "agent": true}

// argValues are the values of a positional argument after the run id, by
// command path.
var argValues = map[string][]string{"gb research plan": {"approve", "reject"}}

// addCompletions gives every command of root's tree its completions, in
// one place: run ids (the user's recent runs, from the API) for the ID
// argument of the research commands and for the flags that take a run id,
// and the values of the flags that take one of a few.
func addCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if takesRunID(c) && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = completeRunArgs
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			switch {
			case runIDFlags[f.Name]:
				_ = c.RegisterFlagCompletionFunc(f.Name, completeRunIDs)
			case flagValues[f.Name] != nil:
				_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(flagValues[f.Name], cobra.ShellCompDirectiveNoFileComp))
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// takesRunID reports whether c's first argument is a run id: a command of
// gb research whose use reads "NAME ID …".
func takesRunID(c *cobra.Command) bool {
	words := strings.Fields(c.Use)
	return len(words) > 1 && words[1] == "ID" && c.HasParent() && c.Parent().Name() == "research"
}

// completeRunArgs completes the run id of a command's first argument, and
// the fixed values of the one after it, if any.
func completeRunArgs(cmd *cobra.Command, a []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch {
	case len(a) == 0:
		return completeRunIDs(cmd, a, toComplete)
	case len(a) == 1 && argValues[cmd.CommandPath()] != nil:
		return argValues[cmd.CommandPath()], cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeRunIDs offers the ids of the user's recent runs that start with
// toComplete, each described by its status and topic. With no API key or
// no API it offers nothing: a completion has no place to say why.
func completeRunIDs(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := newAPIClient()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
	defer cancel()
	var page listPage
	q := url.Values{"limit": {strconv.Itoa(min(completeRecentRuns, jobs.MaxListLimit))}}
	if err := c.do(ctx, "GET", "/v1/gb/research?"+q.Encode(), nil, &page); err != nil {
		cobra.CompDebugln(fmt.Sprintf("listing runs: %v", err), true)
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	// a comma separated list (--notes-from 12,1…) completes its last id
	done, last := "", toComplete
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	var out []cobra.Completion
	for _, r := range page.Runs {
		id := strconv.FormatInt(r.ID, 10)
		if strings.HasPrefix(id, last) {
			out = append(out, cobra.CompletionWithDesc(done+id, fit(r.Status+" · "+agentName(&r)+" · "+r.Topic, 60)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
