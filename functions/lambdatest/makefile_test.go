package lambdatest_test

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/functions/scheduler/schedule"
	"github.com/gbresearch/gb/functions/worker/work"
)

// makeBuild runs a build-<LogicalId> target from the repository root and
// returns the bootstrap it left. By default it calls make as SAM's make
// workflow does (aws-lambda-builders' CustomMakeAction): `make --makefile
// <Makefile> build-<LogicalId>` with ARTIFACTS_DIR in the environment; with
// byHand, as a person does: `make build-<LogicalId> ARTIFACTS_DIR=<dir>`.
func makeBuild(t *testing.T, name string, byHand bool, vars ...string) string {
	t.Helper()
	root := lambdatest.ModuleRoot(t)
	dir := t.TempDir()
	cmd := exec.Command("make", "--makefile", filepath.Join(root, "Makefile"), "build-"+name)
	cmd.Env = append(append(os.Environ(), "ARTIFACTS_DIR="+dir), vars...)
	if byHand {
		cmd = exec.Command("make", append([]string{"build-" + name, "ARTIFACTS_DIR=" + dir}, vars...)...)
	}
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build-%s: %v\n%s", name, err, out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "bootstrap" {
		t.Fatalf("build-%s left %v in ARTIFACTS_DIR, want bootstrap alone", name, entries)
	}
	return filepath.Join(dir, "bootstrap")
}

// checkBootstrap checks that path is an executable, static ELF for machine,
// built with lambda.norpc, -trimpath and cgo off; it returns its size.
func checkBootstrap(t *testing.T, path string, machine elf.Machine) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s is not executable: %v", path, st.Mode())
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s is not an ELF: %v", path, err)
	}
	defer f.Close()
	if f.Machine != machine || f.Class != elf.ELFCLASS64 || f.Type != elf.ET_EXEC {
		t.Errorf("%s: machine %v class %v type %v, want %v ELFCLASS64 ET_EXEC", path, f.Machine, f.Class, f.Type, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is dynamically linked (%v)", path, p.Type)
		}
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: no Go build info: %v", path, err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	// Stripped: no symbol table and no DWARF (the Makefile's -s -w).
	for _, sec := range []string{".symtab", ".debug_info", ".zdebug_info"} {
		if f.Section(sec) != nil {
			t.Errorf("%s has a %s section: build it with the Makefile's default LDFLAGS (-s -w)", path, sec)
		}
	}
	for k, want := range map[string]string{"-tags": "lambda.norpc", "CGO_ENABLED": "0", "GOOS": "linux", "-trimpath": "true"} {
		if settings[k] != want {
			t.Errorf("%s: build setting %s=%q, want %q", path, k, settings[k], want)
		}
	}
	return st.Size()
}

// TestMakeTargets builds every function's target as sam build does, for
// arm64 as deployed, and checks the bootstraps.
func TestMakeTargets(t *testing.T) {
	// Under CI=true it always runs, -short or not.
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("builds every function for arm64")
	}
	// The worker's steps record the gb version the Makefile stamps in
	// (GB_VERSION, by default git describe of the tree; jobs.BuildVersion).
	const version = "gb-stamp-test-7f3a"
	for _, name := range []string{"ApiFunction", "WorkerFunction", "SchedulerFunction", "MigrateFunction"} {
		var vars []string
		if name == "WorkerFunction" {
			vars = []string{"GB_VERSION=" + version}
		}
		path := makeBuild(t, name, false, vars...)
		size := checkBootstrap(t, path, elf.EM_AARCH64)
		t.Logf("%s: arm64 bootstrap of %.1f MB", name, float64(size)/(1<<20))
		if name == "WorkerFunction" {
			if b, err := os.ReadFile(path); err != nil || !bytes.Contains(b, []byte(version)) {
				t.Errorf("the worker's bootstrap does not hold the gb version %q (%v)", version, err)
			}
		}
	}
}

// TestMakeTargetsRunUnderEmulator builds each function's target for amd64
// (the same target, LAMBDA_ARCH=amd64, called as a person calls it) and
// runs it under aws-lambda-rie with one of its real events.
func TestMakeTargetsRunUnderEmulator(t *testing.T) {
	t.Parallel()
	root := lambdatest.ModuleRoot(t)
	for _, tc := range []struct {
		name, event string
		check       func(t *testing.T, body []byte, pool *pgxpool.Pool, seed lambdatest.Seeded)
	}{
		{"ApiFunction", "functions/api/testdata/post-research.json", checkCreated},
		{"SchedulerFunction", "functions/scheduler/testdata/scheduled.json", func(t *testing.T, body []byte, _ *pgxpool.Pool, _ lambdatest.Seeded) {
			var res schedule.Result
			if err := json.Unmarshal(body, &res); err != nil || !res.Created {
				t.Fatalf("scheduler: %s", body)
			}
		}},
		{"WorkerFunction", "functions/worker/testdata/sweep.json", func(t *testing.T, body []byte, _ *pgxpool.Pool, _ lambdatest.Seeded) {
			var res work.Result
			if err := json.Unmarshal(body, &res); err != nil || res.Source != "gb.sweep" {
				t.Fatalf("worker: %s", body)
			}
		}},
		{"MigrateFunction", "functions/migrate/testdata/invoke.json", func(t *testing.T, body []byte, _ *pgxpool.Pool, _ lambdatest.Seeded) {
			if string(body) != `{"applied":0}` {
				t.Fatalf("migrate on a migrated database: %s", body)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bootstrap := makeBuild(t, tc.name, true, "LAMBDA_ARCH=amd64")
			checkBootstrap(t, bootstrap, elf.EM_X86_64)
			url, pool, seed := lambdatest.SeededDB(t)
			fn := lambdatest.Start(t, bootstrap, map[string]string{
				"DATABASE_URL":                url,
				"AWS_LAMBDA_FUNCTION_TIMEOUT": "30",
				// A worker refuses an invocation too short for a whole step.
				"GB_STEP_TIMEOUT": "20s",
			})
			ev := lambdatest.Event(t, filepath.Join(root, tc.event), map[string]string{"API_KEY": seed.Key, "USER": seed.User})
			inv := fn.Invoke(t, ev)
			if inv.FunctionError != "" {
				t.Fatalf("%s: %q %s", tc.name, inv.FunctionError, inv.Body)
			}
			tc.check(t, inv.Body, pool, seed)
		})
	}
}

// checkCreated checks the API's answer to post-research.json.
func checkCreated(t *testing.T, body []byte, pool *pgxpool.Pool, seed lambdatest.Seeded) {
	t.Helper()
	var res events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(body, &res); err != nil || res.StatusCode != http.StatusAccepted ||
		!strings.Contains(res.Headers["Location"], "/v1/gb/research/") {
		t.Fatalf("POST through the make-built API: %s", body)
	}
	var runs int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM gb_agent_research_runs WHERE user_id = $1", seed.UserID).Scan(&runs); err != nil || runs != 1 {
		t.Fatalf("%d runs (%v), want 1", runs, err)
	}
}
