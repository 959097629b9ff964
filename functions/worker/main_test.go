package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/functions/worker/work"
	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// workerDB is a fresh seeded database, a pool to check it and an
// insert-only agent to start researches in it.
type workerDB struct {
	url   string
	pool  *pgxpool.Pool
	agent *jobs.Service
	seed  lambdatest.Seeded
}

func newWorkerDB(t *testing.T) *workerDB {
	t.Helper()
	url := dbtest.NewURL(t)
	pool, err := db.Open(context.Background(), db.PoolConfig{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	return &workerDB{url: url, pool: pool, agent: agent, seed: lambdatest.Seed(t, pool)}
}

func (d *workerDB) start(t *testing.T, topic string) *jobs.Run {
	t.Helper()
	run, _, err := d.agent.StartResearch(context.Background(), jobs.StartParams{UserID: d.seed.UserID, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// jobStates counts the step jobs by state, attempt and error count.
func (d *workerDB) jobStates(t *testing.T) map[string]int {
	t.Helper()
	rows, err := d.pool.Query(context.Background(), `SELECT state::text || ' attempt=' || attempt ||
		' errors=' || coalesce(array_length(errors, 1), 0), count(*) FROM river_job GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	return out
}

func invokeWorker(t *testing.T, fn *lambdatest.Function, fixture string) (work.Result, time.Duration) {
	t.Helper()
	inv := fn.Invoke(t, lambdatest.Event(t, "testdata/"+fixture, nil))
	if inv.FunctionError != "" {
		t.Fatalf("worker failed: %s", inv.Body)
	}
	var res work.Result
	if err := json.Unmarshal(inv.Body, &res); err != nil {
		t.Fatalf("result %s: %v", inv.Body, err)
	}
	return res, inv.Took
}

// requireNothingLeft checks that after an invocation no job is running and
// the worker holds no session, so none listening, on the database.
func requireNothingLeft(t *testing.T, d *workerDB) {
	t.Helper()
	var running int
	if err := d.pool.QueryRow(context.Background(), "SELECT count(*) FROM river_job WHERE state = 'running'").Scan(&running); err != nil {
		t.Fatal(err)
	}
	if running != 0 {
		t.Fatalf("%d jobs left running after the invocation", running)
	}
	lambdatest.WaitNoBackends(t, d.pool, "gb-worker", 2*time.Second)
}

// TestWorkerUnderEmulator runs the worker bootstrap under aws-lambda-rie:
// a sweep with nothing to do returns at once; a sweep (in the same
// execution environment, as after a thaw) works a research to its report
// and returns idle; neither leaves a job running or a session open.
func TestWorkerUnderEmulator(t *testing.T) {
	t.Parallel()
	d := newWorkerDB(t)
	lambdaAPI := lambdatest.NewLambdaAPI(t)
	env := lambdaAPI.Env()
	env["DATABASE_URL"] = d.url
	env["WORKER_FUNCTION_NAME"] = "gb-worker"
	env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = "60"
	env["GB_STEP_TIMEOUT"] = "20s" // 60 s hold a step (work.Config.MinTimeout)
	fn := lambdatest.Start(t, lambdatest.Build(t, "functions/worker"), env)

	res, took := invokeWorker(t, fn, "scheduled-event.json")
	if res.Drain.Reason != jobs.DrainIdle || res.Drain.Worked != 0 {
		t.Fatalf("empty sweep: %+v", res)
	}
	t.Logf("empty sweep took %s", took)
	requireNothingLeft(t, d)

	run := d.start(t, "How does the context package carry cancellation signals?")
	res, took = invokeWorker(t, fn, "sweep.json")
	if res.Source != "gb.sweep" || res.Drain.Reason != jobs.DrainIdle || res.Drain.Worked == 0 {
		t.Fatalf("sweep: %+v", res)
	}
	t.Logf("sweep that worked %d steps took %s", res.Drain.Worked, took)
	done, err := jobs.GetRun(context.Background(), d.pool, run.ID)
	if err != nil || done.Status != jobs.StatusSucceeded {
		t.Fatalf("run %+v, %v", done, err)
	}
	if kicks := lambdaAPI.Calls(); len(kicks) != 0 {
		t.Fatalf("an idle worker kicked another: %+v", kicks)
	}
	requireNothingLeft(t, d)
}

// TestWorkerStopsBeforeItsDeadline gives the worker a 12-second timeout,
// the least that holds its 2-second steps, and steps of 1.9 s: it cancels
// at 7 s and takes jobs until 5 s. The invocation returns its own result
// (one that ran past its timeout would be ended by the emulator with a
// function error instead), which says its drain stopped at its deadline
// with every step it started committed and none interrupted; the runs'
// next steps wait in the queue with no attempt spent, nothing runs or
// listens afterwards, and another worker is kicked for them.
func TestWorkerStopsBeforeItsDeadline(t *testing.T) {
	t.Parallel()
	d := newWorkerDB(t)
	lambdaAPI := lambdatest.NewLambdaAPI(t)
	env := lambdaAPI.Env()
	env["DATABASE_URL"] = d.url
	env["WORKER_FUNCTION_NAME"] = "gb-worker"
	// Steps of about 2 s, so that a run is still working when the drain
	// stops fetching 5 s in, with room to spare under their 4 s timeout on
	// a loaded machine; 14 s is the least timeout that holds a 4 s step
	// (work.Config.MinTimeout).
	env["GB_OFFLINE_DELAY"] = "1900ms"
	env["GB_STEP_TIMEOUT"] = "4s"
	env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = "14"
	fn := lambdatest.Start(t, lambdatest.Build(t, "functions/worker"), env)

	d.start(t, "How does the context package carry cancellation signals?")
	d.start(t, "What does sync.WaitGroup wait for?")
	res, took := invokeWorker(t, fn, "kick.json") // fails on a function error
	t.Logf("invocation took %s: %+v", took, res)
	if res.Source != "gb.kick" || res.Drain.Reason != jobs.DrainDeadline || res.Drain.Interrupted != 0 || res.Drain.Ready != 2 {
		t.Fatalf("result %+v; want the kick's drain stopped at its deadline with both runs' next steps ready, none interrupted", res)
	}
	if got := d.jobStates(t); got["available attempt=0 errors=0"] != 2 || got["running attempt=1 errors=0"] != 0 {
		t.Fatalf("jobs after the deadline: %v; want 2 available with no attempt spent", got)
	}
	kicks := lambdaAPI.Calls()
	if len(kicks) != 1 || kicks[0].InvocationType != "Event" || kicks[0].Path != "/2015-03-31/functions/gb-worker/invocations" {
		t.Fatalf("work left at the deadline should kick one worker: %+v", kicks)
	}
	requireNothingLeft(t, d)
}

// TestWorkerRefusesATimeoutTooShortForItsSteps: a 5-second timeout with the
// default 3-minute steps fails the invocation with an error that names
// both settings and the smallest safe timeout, and leaves the queue as it
// was.
func TestWorkerRefusesATimeoutTooShortForItsSteps(t *testing.T) {
	t.Parallel()
	d := newWorkerDB(t)
	lambdaAPI := lambdatest.NewLambdaAPI(t)
	env := lambdaAPI.Env()
	env["DATABASE_URL"] = d.url
	env["WORKER_FUNCTION_NAME"] = "gb-worker"
	env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = "5"
	fn := lambdatest.Start(t, lambdatest.Build(t, "functions/worker"), env)

	d.start(t, "How does the context package carry cancellation signals?")
	inv := fn.Invoke(t, lambdatest.Event(t, "testdata/kick.json", nil))
	if inv.FunctionError == "" {
		t.Fatalf("a worker whose timeout cannot hold a step answered %s", inv.Body)
	}
	for _, want := range []string{"WorkerTimeout", "GB_STEP_TIMEOUT", "190 seconds"} {
		if !strings.Contains(string(inv.Body), want) {
			t.Errorf("the refusal %s does not say %q", inv.Body, want)
		}
	}
	if got := d.jobStates(t); len(got) != 1 || got["available attempt=0 errors=0"] != 1 {
		t.Fatalf("jobs after a refused invocation: %v; want the one job left as it was", got)
	}
	if kicks := lambdaAPI.Calls(); len(kicks) != 0 {
		t.Fatalf("a refused invocation kicked another worker: %+v", kicks)
	}
	requireNothingLeft(t, d)
}
