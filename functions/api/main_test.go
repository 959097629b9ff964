package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/jobs"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// TestAPIUnderEmulator runs the API bootstrap under aws-lambda-rie behind
// the exec query mode RDS Proxy needs: an HTTP API POST creates a research,
// kicks the worker asynchronously, and a GET reads it back.
func TestAPIUnderEmulator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool, seed := lambdatest.SeededDB(t)
	lambdaAPI := lambdatest.NewLambdaAPI(t)

	env := lambdaAPI.Env()
	env["DATABASE_URL"] = url
	env["DATABASE_PROXY"] = "true"
	env["WORKER_FUNCTION_NAME"] = "gb-worker"
	env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = "30"
	// As deployed: JSON logs, ApplicationLogLevel from the LogLevel parameter.
	env["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
	env["AWS_LAMBDA_LOG_LEVEL"] = "DEBUG"
	env["GB_LOG_LEVEL"] = "debug"
	fn := lambdatest.Start(t, lambdatest.Build(t, "functions/api"), env)

	call := func(t *testing.T, fixture string, vars map[string]string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		inv := fn.Invoke(t, lambdatest.Event(t, "testdata/"+fixture, vars))
		if inv.Status != http.StatusOK || inv.FunctionError != "" {
			t.Fatalf("%s: invoke status %d error %q: %s", fixture, inv.Status, inv.FunctionError, inv.Body)
		}
		var res events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(inv.Body, &res); err != nil {
			t.Fatalf("%s: not an HTTP API response: %v\n%s", fixture, err, inv.Body)
		}
		return res
	}
	vars := map[string]string{"API_KEY": seed.Key}

	res := call(t, "post-research.json", vars)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %d %s", res.StatusCode, res.Body)
	}
	var created jobs.Run
	if err := json.Unmarshal([]byte(res.Body), &created); err != nil {
		t.Fatal(err)
	}
	if created.ID == 0 || created.Status != jobs.StatusQueued || created.MaxSteps != 12 ||
		res.Headers["Location"] != "/v1/gb/research/"+strconv.FormatInt(created.ID, 10) {
		t.Fatalf("POST answered %+v with headers %v", created, res.Headers)
	}
	kicks := lambdaAPI.Calls()
	if len(kicks) != 1 || kicks[0].Path != "/2015-03-31/functions/gb-worker/invocations" || kicks[0].InvocationType != "Event" {
		t.Fatalf("want one asynchronous invocation of the worker, got %+v", kicks)
	}
	var jobCount int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'available'
		AND (args->>'run_id')::bigint = $1`, created.ID).Scan(&jobCount); err != nil {
		t.Fatal(err)
	}
	if jobCount != 1 {
		t.Fatalf("%d available step jobs for the new run, want 1", jobCount)
	}

	// A write closes the API's connections before the invocation returns:
	// River's insert calls nextval(), which pins an RDS Proxy session for
	// the life of its connection.
	lambdatest.WaitNoBackends(t, pool, "gb-api", 2*time.Second)
	// Its debug record says so, with the Lambda and API Gateway request ids.
	requireLogRecord(t, fn, "released database connections after a write", "Cq3nTgWkjoEEJ8g=")

	vars["RUN_ID"] = strconv.FormatInt(created.ID, 10)
	res = call(t, "get-research.json", vars)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %s", res.StatusCode, res.Body)
	}
	// A read keeps its connection for the next request.
	if sessions, _ := lambdatest.Backends(t, pool, "gb-api"); sessions == 0 {
		t.Fatal("a read closed the API's connections")
	}
	var got jobs.Run
	if err := json.Unmarshal([]byte(res.Body), &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != created.ID || got.Topic != created.Topic || got.Status != jobs.StatusQueued {
		t.Fatalf("GET read %+v, want run %d", got, created.ID)
	}
	if owner, err := jobs.GetForUser(ctx, pool, seed.UserID, created.ID); err != nil || owner.ID != created.ID {
		t.Fatalf("run %d is not %s's: %v", created.ID, seed.User, err)
	}

	// A failed kick never fails the request; an invalid request kicks no one.
	lambdaAPI.Fail(true)
	if res = call(t, "post-research.json", vars); res.StatusCode != http.StatusAccepted {
		t.Fatalf("POST with a failing kick: %d %s", res.StatusCode, res.Body)
	}
	lambdaAPI.Fail(false)
	before := len(lambdaAPI.Calls())
	if res = call(t, "post-invalid.json", vars); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("invalid POST: %d %s", res.StatusCode, res.Body)
	}
	if len(lambdaAPI.Calls()) != before {
		t.Fatal("an invalid request kicked the worker")
	}

	// The API never works jobs and never listens.
	if _, listening := lambdatest.Backends(t, pool, "gb-api"); listening != 0 {
		t.Fatalf("the API holds %d LISTEN connections", listening)
	}
	var running int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state <> 'available'").Scan(&running); err != nil {
		t.Fatal(err)
	}
	if running != 0 {
		t.Fatalf("%d jobs left the available state: the API worked a job", running)
	}
}

// requireLogRecord waits for the JSON debug record with the message,
// carrying a Lambda request id and the API Gateway request id apiID.
func requireLogRecord(t *testing.T, fn *lambdatest.Function, message, apiID string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, line := range strings.Split(fn.Logs(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["message"] != message {
				continue
			}
			if rec["level"] != "DEBUG" || rec["requestId"] == nil || rec["requestId"] == "" || rec["apiRequestId"] != apiID {
				t.Fatalf("record %v: want level DEBUG, a requestId and apiRequestId %s", rec, apiID)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q record in the logs:\n%s", message, fn.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
