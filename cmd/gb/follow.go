package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// followRun prints the events of a run's tree as they happen (the event
// stream, or long polls where the API cannot stream), then its report
// once every agent has ended. A research that failed is an error.
func followRun(ctx context.Context, c *apiClient, id int64, out io.Writer) error {
	header := true
	err := followTree(ctx, c, id, 0, func(evs []jobs.Event) error {
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

// Limits of the CLI's event stream.
const (
	// streamIdle is how long the stream may stay silent, heartbeats
	// included, before the CLI takes it for dead and reconnects.
	streamIdle = 60 * time.Second
	// streamRetries is how many reconnections in a row may fail to bring
	// anything before following gives up.
	streamRetries = 5
	// streamBatch is the most events handed on at once.
	streamBatch = 500
)

// errNoStream says that the API does not serve the event stream (an older
// server answers 404, a gateway that buffers answers 501), or not to this
// user now (429: the most streams open).
var errNoStream = errors.New("the API does not stream events")

// followTree is watchTree over the event stream when the API serves it,
// else over long polls: each gets every batch of events of id's tree
// after seq after until every agent of the tree has ended and no event is
// left.
func followTree(ctx context.Context, c *apiClient, id, after int64, each func([]jobs.Event) error) error {
	err := streamTree(ctx, c, id, after, each)
	if errors.Is(err, errNoStream) {
		return watchTree(ctx, c, id, after, each)
	}
	return err
}

// streamTree reads the tree's event stream, reconnecting with
// Last-Event-ID when it drops, until its end event. Events up to seq
// after are skipped. It fails with errNoStream when the first request
// finds no stream to read or is refused one.
func streamTree(ctx context.Context, c *apiClient, id, after int64, each func([]jobs.Event) error) error {
	var lastN int64
	failures := 0
	for first := true; ; first = false {
		ended, progressed, err := readStream(ctx, c, id, &lastN, after, each)
		if ended || ctx.Err() != nil {
			return err
		}
		var ae *apiError
		if errors.As(err, &ae) {
			// No stream here, or the user has the most streams open: the
			// long poll follows as well, a little later.
			if first && (ae.Status == http.StatusNotFound || ae.Status == http.StatusNotImplemented ||
				ae.Status == http.StatusTooManyRequests) {
				return errNoStream
			}
			if ae.Status < 500 && ae.Status != http.StatusTooManyRequests {
				return err
			}
		}
		if progressed {
			failures = 0
		} else if failures++; failures > streamRetries {
			return fmt.Errorf("the event stream of research %d keeps failing: %w", id, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(failures) * time.Second):
		}
	}
}

// readStream reads one connection of the event stream after event number
// *lastN, moving it on. It says whether the stream's end came and whether
// any event or heartbeat did.
func readStream(ctx context.Context, c *apiClient, id int64, lastN *int64, after int64, each func([]jobs.Event) error) (ended, progressed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v1/gb/research/%d/events/stream", c.base, id), nil)
	if err != nil {
		return false, false, fmt.Errorf("error building request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "text/event-stream")
	if *lastN > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(*lastN, 10))
	}
	// No overall timeout: a silence longer than streamIdle ends it instead.
	resp, err := (&http.Client{Transport: c.http.Transport}).Do(req)
	if err != nil {
		return false, false, fmt.Errorf("cannot reach the API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, false, answerError(resp)
	}
	idle := time.AfterFunc(streamIdle, cancel)
	defer idle.Stop()
	rd := bufio.NewReader(resp.Body)
	var batch []jobs.Event
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := each(batch)
		batch = nil
		return err
	}
	var event, data string
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			if ferr := flush(); ferr != nil {
				return false, progressed, ferr
			}
			return false, progressed, fmt.Errorf("the event stream of research %d dropped: %w", id, err)
		}
		idle.Reset(streamIdle)
		progressed = true
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, ":"): // a heartbeat
		case line != "":
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "event":
				event = v
			case "data":
				data += v
			}
		case event == "end":
			return true, true, flush()
		case event == "error":
			if err := flush(); err != nil {
				return false, true, err
			}
			return false, true, fmt.Errorf("the event stream of research %d ended with an error: %s", id, printable(data))
		case data != "":
			var e jobs.Event
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				return false, true, fmt.Errorf("error decoding an event of the stream: %w", err)
			}
			if e.N > *lastN {
				*lastN = e.N
				if e.Seq > after {
					batch = append(batch, e)
				}
			}
		}
		if line == "" {
			event, data = "", ""
			if len(batch) >= streamBatch || rd.Buffered() == 0 {
				if err := flush(); err != nil {
					return false, true, err
				}
			}
		}
	}
}

// answerError is the error of an answer that is not a success, with the
// API's message when its body has one.
func answerError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	ae := decodeAPIError(resp.StatusCode, data)
	if resp.StatusCode == http.StatusUnauthorized {
		return authError(fmt.Errorf("the API refused GB_API_KEY: %w", ae))
	}
	return ae
}
