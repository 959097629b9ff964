package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/infra/inert"
	"github.com/gbresearch/gb/jobs"
)

// longPollSeconds is the wait of the CLI's long polls, under the API's 25.
const longPollSeconds = 20

// eventsPage is the answer of GET /v1/gb/research/{id}/events.
type eventsPage struct {
	Events    []jobs.Event `json:"events"`
	NextAfter int64        `json:"next_after"`
}

// pollEvents returns the events of id's tree after after, waiting up to
// wait seconds for one.
func pollEvents(ctx context.Context, c *apiClient, id, after int64, wait int) (eventsPage, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if wait > 0 {
		q.Set("wait", strconv.Itoa(wait))
	}
	var p eventsPage
	err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/events?%s", id, q.Encode()), nil, &p)
	return p, err
}

func researchEventsCmd() *cobra.Command {
	var after int64
	var follow bool
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "The events of a run's tree, one line each: number in the tree, seq, time, agent, kind, detail",
		Example: `  gb research events 1
  gb research events 1 --after 40 --follow
  gb research events 1 -o json | jq '.events[].kind'`,
		Args: args(1, 1, "one run ID"),
	}
	o := addOutput(cmd)
	cmd.RunE = withRun(o, func(ctx context.Context, c *apiClient, cmd *cobra.Command, id int64, asJSON bool) error {
		out := cmd.OutOrStdout()
		if !follow {
			p, err := pollEvents(ctx, c, id, after, 0)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out, p)
			}
			return printEvents(out, p.Events)
		}
		header := true
		return followTree(ctx, c, id, after, func(evs []jobs.Event) error {
			if asJSON {
				for _, e := range evs {
					b, err := json.Marshal(e) // one object a line
					if err != nil {
						return fmt.Errorf("error writing JSON: %w", err)
					}
					if _, err := out.Write(append(inert.JSON(b), '\n')); err != nil {
						return fmt.Errorf("error writing JSON: %w", err)
					}
				}
				return nil
			}
			err := printEventsFixed(out, evs, header)
			header = false
			return err
		})
	})
	cmd.Flags().Int64Var(&after, "after", 0, "only events after this seq")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing events as they happen until every agent of the tree has ended (with -o json: one event per line)")
	return cmd
}

// watchTree calls each with every batch of events of id's tree after
// after, long-polling for new ones, until the run and its sub-agents have
// all ended and no event is left.
func watchTree(ctx context.Context, c *apiClient, id, after int64, each func([]jobs.Event) error) error {
	for {
		p, err := pollEvents(ctx, c, id, after, longPollSeconds)
		if err != nil {
			return err
		}
		if len(p.Events) > 0 {
			if err := each(p.Events); err != nil {
				return err
			}
			after = p.NextAfter
			if len(p.Events) == 500 {
				continue // a full page: there is more at once
			}
		}
		var d jobs.RunDetails
		if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d", id), nil, &d); err != nil {
			return err
		}
		if d.Ended() && d.Tree.Working == 0 {
			rest, err := pollEvents(ctx, c, id, after, 0)
			if err == nil && len(rest.Events) > 0 {
				err = each(rest.Events)
			}
			return err
		}
	}
}

// eventColumns are the columns of an events table.
var eventColumns = []string{"#", "SEQ", "TIME", "AGENT", "KIND", "DETAIL"}

// rowWriter is a table: aligned by text/tabwriter, or by fixed widths.
type rowWriter interface {
	row(cells ...string)
	flush() error
}

// printEvents prints events as a table aligned by text/tabwriter.
func printEvents(w io.Writer, evs []jobs.Event) error {
	t := newTable(w, eventColumns...)
	writeEvents(t, evs)
	return t.flushOrEmpty("no events")
}

// printEventsFixed prints events with fixed column widths, so that the
// batches of a follow line up; the header comes with the first.
func printEventsFixed(w io.Writer, evs []jobs.Event, header bool) error {
	t := &fixedTable{w: w, widths: []int{4, 7, 12, 24, 16}}
	if header {
		t.row(eventColumns...)
	}
	writeEvents(t, evs)
	return t.flush()
}

func writeEvents(t rowWriter, evs []jobs.Event) {
	for _, e := range evs {
		t.row(strconv.FormatInt(e.N, 10), strconv.FormatInt(e.Seq, 10), e.At.Local().Format("15:04:05.000"), fit(e.Agent, 24), e.Kind,
			fit(eventDetail(e.Data), 90))
	}
}

// eventDetail renders an event's data as key=value pairs, sorted by key.
func eventDetail(data json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return string(data)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		var v string
		switch x := m[k].(type) {
		case string:
			v = x
			if strings.ContainsAny(v, " \t\n=") || v == "" {
				v = strconv.Quote(oneLine(v))
			}
		default:
			b, _ := json.Marshal(x)
			v = string(b)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}
