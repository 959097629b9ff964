package main

import (
	"context"
	"encoding/json"
	neturl "net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/jobs"
)

// TestWorkerStartsWhenTheDatabaseComesBack runs the worker bootstrap under
// aws-lambda-rie with its database behind a TCP proxy that is down from
// the start: the cold start does not exit, and the invocation fails with an
// error that says the database cannot be reached and nothing was done.
// Once the proxy is up, the next sweep, in the same execution environment,
// sets the worker up and works a research to its report.
func TestWorkerStartsWhenTheDatabaseComesBack(t *testing.T) {
	t.Parallel()
	d := newWorkerDB(t)
	u, err := neturl.Parse(d.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := lambdatest.NewTCPProxy(t, u.Host)
	proxy.Down()
	u.Host = proxy.Addr
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	lambdaAPI := lambdatest.NewLambdaAPI(t)
	env := lambdaAPI.Env()
	env["DATABASE_URL"] = u.String()
	env["WORKER_FUNCTION_NAME"] = "gb-worker"
	env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = "60"
	env["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
	env["GB_STEP_TIMEOUT"] = "20s" // 60 s hold a step (work.Config.MinTimeout)
	fn := lambdatest.Start(t, lambdatest.Build(t, "functions/worker"), env)

	inv := fn.Invoke(t, lambdatest.Event(t, "testdata/sweep.json", nil))
	var failure struct {
		Message string `json:"errorMessage"`
	}
	if inv.FunctionError == "" || json.Unmarshal(inv.Body, &failure) != nil ||
		!strings.Contains(failure.Message, "cannot reach the database, so this invocation did no work") {
		t.Fatalf("with the database down the sweep answered %q %s; want an error saying it cannot reach the database", inv.FunctionError, inv.Body)
	}
	// One warning for the invocation, with its request id.
	waitForLine(t, fn, `"level":"WARN"`, "this invocation did no work", `"requestId"`)
	if strings.Contains(fn.Logs(), "worker cannot start") {
		t.Fatalf("the cold start should keep the environment, not exit:\n%s", fn.Logs())
	}

	proxy.Up()
	run := d.start(t, "How does the context package carry cancellation signals?")
	res, _ := invokeWorker(t, fn, "sweep.json")
	if res.Source != "gb.sweep" || res.Drain.Reason != jobs.DrainIdle || res.Drain.Worked == 0 {
		t.Fatalf("sweep after the outage: %+v", res)
	}
	done, err := jobs.GetRun(context.Background(), d.pool, run.ID)
	if err != nil || done.Status != jobs.StatusSucceeded {
		t.Fatalf("run %+v, %v", done, err)
	}
	if strings.Count(fn.Logs(), "Init Duration") > 1 {
		t.Fatalf("the execution environment was started again:\n%s", fn.Logs())
	}
	requireNothingLeft(t, d)
}

// waitForLine waits until a line of the function's logs holds every part.
func waitForLine(t *testing.T, fn *lambdatest.Function, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for line := range strings.Lines(fn.Logs()) {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line of the logs holds %q:\n%s", parts, fn.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
