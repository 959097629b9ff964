package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/functions/lambdatest"
)

// fakeCodeDeploy serves CodeDeploy's PutLifecycleEventHookExecutionStatus
// in its AWS JSON 1.1 protocol: a POST to / with the X-Amz-Target of the
// operation, SigV4-signed for the codedeploy service. It knows the
// deployments it was given and answers others as CodeDeploy does, with
// DeploymentDoesNotExistException.
type fakeCodeDeploy struct {
	mu          sync.Mutex
	deployments []string
	reports     []hookReport
}

// hookReport is one status a hook reported.
type hookReport struct {
	Deployment, Execution, Status string
}

func (f *fakeCodeDeploy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, typ, msg string) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/" ||
		r.Header.Get("X-Amz-Target") != "CodeDeploy_20141006.PutLifecycleEventHookExecutionStatus" ||
		r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
		fail(http.StatusBadRequest, "UnknownOperationException", r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Amz-Target"))
		return
	}
	if a := r.Header.Get("Authorization"); !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential=AKIDGBTEST/") ||
		!strings.Contains(a, "/us-east-1/codedeploy/aws4_request") {
		fail(http.StatusForbidden, "UnrecognizedClientException", "not signed for codedeploy: "+a)
		return
	}
	var in struct {
		DeploymentID string `json:"deploymentId"`
		ExecutionID  string `json:"lifecycleEventHookExecutionId"`
		Status       string `json:"status"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail(http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	if !slices.Contains([]string{"Pending", "InProgress", "Succeeded", "Failed", "Skipped", "Unknown"}, in.Status) {
		fail(http.StatusBadRequest, "InvalidLifecycleEventHookExecutionStatusException", "status "+in.Status)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.deployments, in.DeploymentID) {
		fail(http.StatusBadRequest, "DeploymentDoesNotExistException", "The deployment "+in.DeploymentID+" could not be found.")
		return
	}
	f.reports = append(f.reports, hookReport{in.DeploymentID, in.ExecutionID, in.Status})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(map[string]string{"lifecycleEventHookExecutionId": in.ExecutionID})
}

// TestMigrateAsPreTrafficHook runs the migrate bootstrap under
// aws-lambda-rie as CodeDeploy invokes a pre-traffic hook: on an empty
// database it applies the schema and reports Succeeded for the
// deployment's hook; on a database whose schema cannot be applied it
// reports Failed (which stops the deployment before any traffic moves)
// and fails; and a report CodeDeploy refuses fails the invocation.
func TestMigrateAsPreTrafficHook(t *testing.T) {
	t.Parallel()
	cd := &fakeCodeDeploy{deployments: []string{"d-GBTEST001", "d-GBTEST002"}}
	srv := httptest.NewServer(cd)
	t.Cleanup(srv.Close)
	env := func(dbURL string) map[string]string {
		return map[string]string{
			"DATABASE_URL":                dbURL,
			"AWS_LAMBDA_FUNCTION_TIMEOUT": "60",
			"AWS_REGION":                  "us-east-1",
			"AWS_ACCESS_KEY_ID":           "AKIDGBTEST",
			"AWS_SECRET_ACCESS_KEY":       "gb-test-secret",
			"AWS_ENDPOINT_URL_CODEDEPLOY": srv.URL,
		}
	}
	bin := lambdatest.Build(t, "functions/migrate")
	hook := func(fn *lambdatest.Function, deployment string) (lambdatest.Invocation, result) {
		t.Helper()
		inv := fn.Invoke(t, lambdatest.Event(t, "testdata/codedeploy-hook.json", map[string]string{"DEPLOYMENT": deployment}))
		var res result
		if inv.FunctionError == "" {
			if err := json.Unmarshal(inv.Body, &res); err != nil {
				t.Fatalf("result %s: %v", inv.Body, err)
			}
		}
		return inv, res
	}

	good := emptyDB(t)
	fn := lambdatest.Start(t, bin, env(good))
	inv, res := hook(fn, "d-GBTEST001")
	if inv.FunctionError != "" || res.Applied == 0 || res.Hook != "Succeeded" {
		t.Fatalf("hook on an empty database: %s (error %q); want the schema applied and Succeeded", inv.Body, inv.FunctionError)
	}
	// CodeDeploy refuses a report for a deployment it does not know: the
	// invocation fails, saying so.
	inv, _ = hook(fn, "d-UNKNOWN")
	if inv.FunctionError == "" || !strings.Contains(string(inv.Body), "DeploymentDoesNotExistException") {
		t.Fatalf("a refused report: %s (error %q); want the invocation failed with CodeDeploy's error", inv.Body, inv.FunctionError)
	}

	// A database where the project's first table is already something else.
	bad := emptyDB(t)
	conn, err := pgx.Connect(context.Background(), bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), "CREATE VIEW gb_users AS SELECT 1 AS id"); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(context.Background())
	inv, _ = hook(lambdatest.Start(t, bin, env(bad)), "d-GBTEST002")
	if inv.FunctionError == "" || !strings.Contains(string(inv.Body), "gb_users") {
		t.Fatalf("hook on a database the schema cannot be applied to: %s (error %q); want a failed invocation naming the migration's error", inv.Body, inv.FunctionError)
	}

	cd.mu.Lock()
	defer cd.mu.Unlock()
	want := []hookReport{{"d-GBTEST001", "", "Succeeded"}, {"d-GBTEST002", "", "Failed"}}
	if len(cd.reports) != len(want) {
		t.Fatalf("CodeDeploy got %+v; want %+v", cd.reports, want)
	}
	for i, r := range cd.reports {
		if r.Deployment != want[i].Deployment || r.Status != want[i].Status || !strings.HasPrefix(r.Execution, "eyJ") {
			t.Errorf("report %d: %+v; want %s %s with the hook's execution id", i, r, want[i].Deployment, want[i].Status)
		}
	}
}
