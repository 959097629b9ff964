package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
)

// streamAnswer is a streamed function URL answer as the emulator gives it
// back: the prelude (status and headers), eight zero bytes, then the body.
// The emulator reads the whole stream before it answers the invoke, so
// the body is all of it, once the invocation ended.
type streamAnswer struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
	body       string
}

func parseStreamAnswer(t *testing.T, inv lambdatest.Invocation) streamAnswer {
	t.Helper()
	if inv.Status != http.StatusOK || inv.FunctionError != "" {
		t.Fatalf("invoke status %d error %q: %s", inv.Status, inv.FunctionError, inv.Body)
	}
	prelude, body, ok := bytes.Cut(inv.Body, make([]byte, 8))
	if !ok {
		t.Fatalf("not a streamed HTTP answer (no prelude): %q", inv.Body)
	}
	var a streamAnswer
	if err := json.Unmarshal(prelude, &a); err != nil {
		t.Fatalf("prelude %q: %v", prelude, err)
	}
	a.body = string(body)
	return a
}

// ids are the ids of the answer's event messages and the names of its
// named events (end, error), in order.
func (a streamAnswer) ids(t *testing.T, root int64) []string {
	t.Helper()
	var out []string
	for _, frame := range strings.Split(a.body, "\n\n") {
		var id, event, data string
		for _, line := range strings.Split(frame, "\n") {
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "id":
				id = v
			case "event":
				event = v
			case "data":
				data = v
			}
		}
		switch {
		case event != "":
			out = append(out, event)
		case id != "":
			var e jobs.Event
			if err := json.Unmarshal([]byte(data), &e); err != nil || strconv.FormatInt(e.N, 10) != id || e.RootID != root {
				t.Fatalf("message id %s carries %q (%v)", id, data, err)
			}
			out = append(out, id)
		}
	}
	return out
}

// numbers are the strings from..to, then "end".
func numbers(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return append(out, "end")
}

// TestEventStreamUnderEmulator runs the API bootstrap under aws-lambda-rie
// and opens a research's event stream through the function URL's event
// (InvokeMode RESPONSE_STREAM): the function answers in Lambda's streamed
// format, and the stream, resumed after event 1 while the tree works,
// carries every event after it once and ends with the tree. Resumed again
// near the end, it carries the rest. The emulator buffers a streamed
// answer until the invocation ends, so what is checked here is the
// function's side of it; through the HTTP API, which cannot stream, the
// stream route answers 501 and the long poll answers the same events.
func TestEventStreamUnderEmulator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool, seed := lambdatest.SeededDB(t)
	lambdaAPI := lambdatest.NewLambdaAPI(t)
	env := lambdaAPI.Env()
	env["DATABASE_URL"] = url
	env["DATABASE_PROXY"] = "true"
	env["WORKER_FUNCTION_NAME"] = "gb-worker"
	env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = "30"
	fn := lambdatest.Start(t, lambdatest.Build(t, "functions/api"), env)
	vars := map[string]string{"API_KEY": seed.Key}

	inv := fn.Invoke(t, lambdatest.Event(t, "testdata/post-research.json", vars))
	var res events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(inv.Body, &res); err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %v %s", err, inv.Body)
	}
	var run jobs.Run
	if err := json.Unmarshal([]byte(res.Body), &run); err != nil {
		t.Fatal(err)
	}
	vars["RUN_ID"] = strconv.FormatInt(run.ID, 10)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	addEvent := func(tag string) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO gb_agent_research_events (root_id, run_id, kind, data)
			VALUES ($1, $1, 'step', jsonb_build_object('tag', $2::text))`, run.ID, tag); err != nil {
			t.Fatal(err)
		}
	}
	addEvent("before 1")
	addEvent("before 2")

	// Live: the stream is open while events land and the tree ends.
	vars["LAST_ID"] = "1"
	done := make(chan lambdatest.Invocation, 1)
	event := lambdatest.Event(t, "testdata/stream-url.json", vars)
	go func() { done <- fn.Invoke(t, event) }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var open bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM gb_event_streams WHERE root_id = $1)`, run.ID).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream never opened:\n%s", fn.Logs())
		}
	}
	// Past its first read: the stream waits, re-reading on its fallback
	// timer (the API function has no listener), when these land.
	time.Sleep(1500 * time.Millisecond)
	addEvent("live 1")
	addEvent("live 2")
	if _, err := agent.Cancel(ctx, seed.UserID, run.ID); err != nil {
		t.Fatal(err)
	}
	live := <-done
	if live.Took < 1500*time.Millisecond {
		t.Fatalf("the live stream ended after %v, before its events landed", live.Took)
	}
	a := parseStreamAnswer(t, live)
	all, err := jobs.Events(ctx, pool, run.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := len(all)
	if a.StatusCode != http.StatusOK || a.Headers["Content-Type"] != "text/event-stream" {
		t.Fatalf("streamed answer %d %v", a.StatusCode, a.Headers)
	}
	if got, want := a.ids(t, run.ID), numbers(2, n); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the stream after event 1 carried %v, want %v\n%s", got, want, a.body)
	}

	vars["LAST_ID"] = strconv.Itoa(n - 2)
	a = parseStreamAnswer(t, fn.Invoke(t, lambdatest.Event(t, "testdata/stream-url.json", vars)))
	if got, want := a.ids(t, run.ID), numbers(n-1, n); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the stream after event %d carried %v, want %v", n-2, got, want)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM gb_event_streams`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d streams still counted after both ended (%v)", left, err)
	}

	// The fallback: the HTTP API answers the stream route 501, and the long
	// poll the events.
	call := func(fixture string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		inv := fn.Invoke(t, lambdatest.Event(t, "testdata/"+fixture, vars))
		var res events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(inv.Body, &res); err != nil {
			t.Fatalf("%s: not an HTTP API response: %v\n%s", fixture, err, inv.Body)
		}
		return res
	}
	if res := call("stream-httpapi.json"); res.StatusCode != http.StatusNotImplemented || !strings.Contains(res.Body, "StreamUrl") {
		t.Fatalf("the stream route through the HTTP API: %d %s; want 501 naming StreamUrl", res.StatusCode, res.Body)
	}
	vars["AFTER"] = strconv.FormatInt(all[0].Seq, 10)
	res = call("events-httpapi.json")
	var page struct {
		Events []jobs.Event `json:"events"`
	}
	if err := json.Unmarshal([]byte(res.Body), &page); err != nil || res.StatusCode != http.StatusOK || len(page.Events) != n-1 {
		t.Fatalf("the long poll after event 1: %d %s (%v); want %d events", res.StatusCode, res.Body, err, n-1)
	}
}
