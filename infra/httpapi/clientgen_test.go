package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// TestGeneratedClientDrivesAResearch generates a TypeScript client from
// the description the API serves with openapi-typescript, type-checks
// clientgen/driver.ts against it with tsc, and runs it with node against
// the API and a worker: it starts a research with its topic alone, polls
// it to its end with integer ids, reads its report and lists the runs with
// the list's filters, then starts one with notes_from (the first research,
// then a run that is not the caller's). A string run id must not
// type-check.
func TestGeneratedClientDrivesAResearch(t *testing.T) {
	t.Parallel()
	node := clientgenTools(t)
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, []kb.Document{{Source: "sync/once.go", Title: "sync.Once",
		Body: "Once is an object that will perform exactly one action. Do calls the function f if and only if Do is being called for the first time."}}); err != nil {
		t.Fatal(err)
	}
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}, Work: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Stop(context.Background()) })
	key, err := jobs.CreateKey(ctx, pool, "generated")
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(validated(t, httpapi.New(httpapi.Deps{Service: agent})))
	t.Cleanup(api.Close)

	dir := clientgenDir(t, api.URL)
	run := func(env []string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(node, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if err != nil {
			return out.String() + errOut.String(), err
		}
		return out.String(), nil
	}
	if out, err := run(nil, "node_modules/openapi-typescript/bin/cli.js", "openapi.json", "-o", "schema.d.ts"); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, out)
	}
	if out, err := run(nil, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json"); err != nil {
		t.Fatalf("the driver does not type-check against the generated client: %v\n%s", err, out)
	}
	wrong := `import createClient from "openapi-fetch";
import type { paths } from "./schema.js";
const client = createClient<paths>({ baseUrl: "" });
void client.GET("/v1/gb/research/{id}", { params: { path: { id: "1" } } });
`
	if err := os.WriteFile(filepath.Join(dir, "wrong.ts"), []byte(wrong), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(nil, "node_modules/typescript/bin/tsc", "--noEmit", "--strict", "--module", "NodeNext",
		"--moduleResolution", "NodeNext", "--skipLibCheck", "--lib", "ES2022,DOM", "wrong.ts")
	if err == nil || !strings.Contains(out, "not assignable to type 'number'") {
		t.Errorf("a string run id type-checks against the generated client (%v):\n%s", err, out)
	}

	topic := "What does sync.Once guarantee?"
	out, err = run([]string{"GB_API_URL=" + api.URL, "GB_API_KEY=" + key, "GB_TOPIC=" + topic}, "out/driver.js")
	if err != nil {
		t.Fatalf("the driver failed: %v\n%s", err, out)
	}
	var got struct {
		ID            int64     `json:"id"`
		Polls         int       `json:"polls"`
		Status        string    `json:"status"`
		Report        string    `json:"report"`
		TreeRuns      int       `json:"tree_runs"`
		ActiveIDs     []int64   `json:"active_ids"`
		ListedReports []*string `json:"listed_reports"`
		MissingStatus int       `json:"missing_status"`
		MissingCode   string    `json:"missing_code"`
		NotesStatus   int       `json:"notes_from_status"`
		ForeignStatus int       `json:"foreign_notes_status"`
		ForeignField  string    `json:"foreign_notes_field"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("the driver printed %q: %v", out, err)
	}
	t.Logf("driver: research %d %s after %d polls, %d-character report", got.ID, got.Status, got.Polls, len(got.Report))
	uid, err := jobs.Authenticate(ctx, pool, key)
	if err != nil {
		t.Fatal(err)
	}
	d, err := jobs.Details(ctx, pool, uid, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case got.Status != jobs.StatusSucceeded || got.Report == "" || got.Report != d.Report:
		t.Errorf("the driver read %s and a %d-character report; the run is %s with a %d-character one",
			got.Status, len(got.Report), d.Status, len(d.Report))
	case d.Topic != topic || d.MaxSteps != jobs.DefaultMaxSteps:
		t.Errorf("the run started with topic %q and %d steps, want %q and the default %d", d.Topic, d.MaxSteps, topic, jobs.DefaultMaxSteps)
	case got.TreeRuns < 1 || len(got.ActiveIDs) != 0:
		t.Errorf("tree of %d runs, active runs %v after the end", got.TreeRuns, got.ActiveIDs)
	case len(got.ListedReports) != 1 || got.ListedReports[0] == nil || *got.ListedReports[0] != d.Report:
		t.Errorf("the list with include=report gave %v", got.ListedReports)
	case got.MissingStatus != http.StatusNotFound || got.MissingCode != "not_found":
		t.Errorf("a missing run answered %d %q through the client", got.MissingStatus, got.MissingCode)
	case got.NotesStatus != http.StatusAccepted || got.ForeignStatus != http.StatusBadRequest || got.ForeignField != "notes_from":
		t.Errorf("notes_from of the caller's research answered %d; of a missing one %d (field %q), want 202 and 400 notes_from",
			got.NotesStatus, got.ForeignStatus, got.ForeignField)
	}
}

// clientgenTools returns node's path once node and the clientgen packages
// are there (npm ci installs them when only they are missing); what cannot
// be had skips the test, or fails it under CI=true.
func clientgenTools(t *testing.T) string {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s under CI=true (.ci/run installs it)", what)
		}
		t.Skip(what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	if _, err := os.Stat("clientgen/node_modules/openapi-typescript/package.json"); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			missing("the clientgen packages are not installed and npm is missing: run npm ci in infra/httpapi/clientgen")
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = "clientgen"
		if b, err := cmd.CombinedOutput(); err != nil {
			missing("npm ci in infra/httpapi/clientgen failed: " + err.Error() + "\n" + string(b))
		}
	}
	return node
}

// clientgenDir is a folder holding the driver, its tsconfig and package
// file, a link to clientgen's node_modules, and openapi.json as the API at
// url serves it.
func clientgenDir(t *testing.T, url string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := filepath.Abs("clientgen")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(src, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"driver.ts", "tsconfig.json", "package.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Get(url + "/v1/gb/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/gb/openapi.json: %d %v", resp.StatusCode, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "openapi.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
