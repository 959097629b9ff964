// Package lambdatest runs the functions as Lambda runs them, for tests: it
// builds a function as a linux bootstrap, starts it under the Lambda
// Runtime Interface Emulator (aws-lambda-rie, the emulator inside SAM's
// containers) and invokes it with event JSON. It also seeds a test
// database with a user, an API key and a small knowledge base.
//
// It is for tests only. It may import infra/db, infra/dbtest, jobs and jobs/kb.
package lambdatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// RIEModule is the emulator's module at the version the tests use, and
// RIEPackage its main package.
const (
	RIEModule  = "github.com/aws/aws-lambda-runtime-interface-emulator"
	RIEVersion = "v0.0.0-20261030222936-bef5c4ba774d"
	RIEPackage = RIEModule + "/cmd/aws-lambda-rie"
)

// InvokePath is the emulator's invoke path (the Lambda API's, for the one
// function it runs).
const InvokePath = "/2015-03-31/functions/function/invocations"

var (
	buildMu   sync.Mutex
	buildDir  string
	built     = map[string]string{}
	rieOnce   sync.Once
	riePath   string
	rieErr    error
	rootOnce  sync.Once
	rootDir   string
	rootError error
)

// Main runs a package's tests and removes the bootstraps they built.
func Main(m *testing.M) {
	code := m.Run()
	buildMu.Lock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	buildMu.Unlock()
	os.Exit(code)
}

// ModuleRoot returns the directory of the project's go.mod.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			rootError = fmt.Errorf("error running go env GOMOD: %w", err)
			return
		}
		mod := strings.TrimSpace(string(out))
		if mod == "" || mod == os.DevNull {
			rootError = errors.New("not inside the project's module")
			return
		}
		rootDir = filepath.Dir(mod)
	})
	if rootError != nil {
		t.Fatal(rootError)
	}
	return rootDir
}

// Build builds the function in the module directory dir (such as
// "functions/api") as Lambda's provided.al2023 runtime runs it: a static
// linux executable named bootstrap, with the lambda.norpc tag, for the
// host's architecture so that it runs here. Each function is built once
// per test binary; Main removes them.
func Build(t testing.TB, dir string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[dir]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "gb-lambdatest-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, filepath.Base(dir), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", out, "./"+filepath.ToSlash(dir))
	cmd.Dir = ModuleRoot(t)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", dir, err, b)
	}
	built[dir] = out
	return out
}

// RIE returns the path of aws-lambda-rie: on PATH, in $(go env GOPATH)/bin,
// or installed there with go install at RIEVersion. When it cannot be had,
// the test is skipped, or fails under CI=true.
func RIE(t testing.TB) string {
	t.Helper()
	rieOnce.Do(func() { riePath, rieErr = findRIE() })
	if rieErr != nil {
		msg := fmt.Sprintf("aws-lambda-rie is not available (%v); install it with: go install %s@%s", rieErr, RIEPackage, RIEVersion)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return riePath
}

func findRIE() (string, error) {
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOPATH", "GOBIN").Output()
	if err != nil {
		return "", fmt.Errorf("error running go env: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := filepath.Join(strings.Split(lines[0], string(os.PathListSeparator))[0], "bin")
	if len(lines) > 1 && strings.TrimSpace(lines[1]) != "" {
		bin = strings.TrimSpace(lines[1])
	}
	p := filepath.Join(bin, "aws-lambda-rie")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	cmd := exec.Command("go", "install", RIEPackage+"@"+RIEVersion)
	cmd.Dir = os.TempDir() // outside the project's module
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install failed: %w\n%s", err, b)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("go install did not leave %s: %w", p, err)
	}
	return p, nil
}

// Function is a function running under the emulator.
type Function struct {
	// URL is the emulator's address, http://127.0.0.1:PORT. It changes
	// only when Invoke starts the emulator again (see Invoke).
	URL       string
	rie       string
	bootstrap string
	env       map[string]string
	logs      *os.File // what the emulators and the function printed
	client    *http.Client
	mu        sync.Mutex
	emu       *emulator
}

// Start runs bootstrap under the emulator with only the given environment
// (plus PATH and HOME), on ports of its own, and stops it when the test
// ends. Set AWS_LAMBDA_FUNCTION_TIMEOUT (seconds) to bound invocations.
func Start(t testing.TB, bootstrap string, env map[string]string) *Function {
	t.Helper()
	// A client of its own: no connection kept from another function's
	// emulator, which may have had the same port.
	logs, err := os.OpenFile(filepath.Join(t.TempDir(), "logs"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f := &Function{rie: RIE(t), bootstrap: bootstrap, env: env, logs: logs,
		client: &http.Client{Transport: &http.Transport{}}}
	e, err := startEmulator(f, bootstrap, env)
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Logs())
	}
	f.emu, f.URL = e, e.url
	t.Cleanup(func() {
		f.mu.Lock()
		f.emu.stop()
		f.mu.Unlock()
		f.client.CloseIdleConnections()
		defer f.logs.Close()
		if t.Failed() {
			t.Logf("%s logs:\n%s", filepath.Base(filepath.Dir(bootstrap)), f.Logs())
		}
	})
	return f
}

// Logs returns what the emulator and the function printed so far. They
// write to a file, not a pipe, so that once the emulator ended all it
// wrote is there.
func (f *Function) Logs() string {
	b, err := os.ReadFile(f.logs.Name())
	if err != nil {
		return fmt.Sprintf("(the logs could not be read: %v)", err)
	}
	return string(b)
}

// Invocation is the emulator's answer to one invoke.
type Invocation struct {
	// Status is the emulator's HTTP status (200 also for handler errors).
	Status int
	// FunctionError is Lambda's X-Amz-Function-Error header ("Unhandled"
	// when the emulator does not send it): set when the handler returned an
	// error, whose JSON is then the Body.
	FunctionError string
	// Body is the handler's JSON result, or its error.
	Body []byte
	// Took is how long the invocation took, as its caller saw it.
	Took time.Duration
}

// restarts is how many times one Invoke starts the emulator again.
const restarts = 2

// Invoke invokes the function with an event, as Lambda's Invoke API does.
// When the emulator process ended under the request before the invocation
// began (before it printed the invocation's START line), nothing of the
// event reached the function, and Invoke starts the emulator again and
// resends it, as Lambda's callers retry an invoke that never ran; it
// says so in the test's log. An emulator that ended during an
// invocation, or a broken request to a running one, fails the test.
func (f *Function) Invoke(t testing.TB, event []byte) Invocation {
	t.Helper()
	for attempt := 0; ; attempt++ {
		f.mu.Lock()
		e := f.emu
		f.mu.Unlock()
		id := newRequestID(t)
		inv, err := f.invoke(e, id, event)
		if err == nil {
			return inv
		}
		ended, how := e.ended(5 * time.Second)
		switch {
		case !ended:
			t.Fatalf("invoke %s: %v (the emulator still runs)\n%s", id, err, f.Logs())
		case strings.Contains(f.Logs(), "START RequestId: "+id+" "):
			t.Fatalf("invoke %s: %v; the emulator ended during the invocation (%s)\n%s", id, err, how, f.Logs())
		case attempt == restarts:
			t.Fatalf("invoke %s: %v; the emulator ended before the invocation began (%s), %d times\n%s", id, err, how, attempt+1, f.Logs())
		}
		t.Logf("invoke %s: the emulator ended before the invocation began (%s); starting it again", id, how)
		f.restart(t, e)
	}
}

// restart replaces the ended emulator e with a new one.
func (f *Function) restart(t testing.TB, e *emulator) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.emu != e {
		return // another Invoke restarted it
	}
	next, err := startEmulator(f, f.bootstrap, f.env)
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Logs())
	}
	f.emu, f.URL = next, next.url
}

// invoke sends one invoke request with the request id id.
func (f *Function) invoke(e *emulator, id string, event []byte) (Invocation, error) {
	began := time.Now()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, e.url+InvokePath, bytes.NewReader(event))
	if err != nil {
		return Invocation{}, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("X-Amzn-RequestId", id)
	res, err := f.client.Do(req)
	if err != nil {
		return Invocation{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return Invocation{}, fmt.Errorf("reading the answer: %w", err)
	}
	inv := Invocation{Status: res.StatusCode, FunctionError: res.Header.Get("X-Amz-Function-Error"),
		Body: body, Took: time.Since(began)}
	if inv.FunctionError == "" {
		// The emulator answers a handler's error with its JSON but without
		// Lambda's header; tell it from a result by its two fields.
		var e struct {
			Message *string `json:"errorMessage"`
			Type    *string `json:"errorType"`
		}
		if json.Unmarshal(body, &e) == nil && e.Message != nil && e.Type != nil {
			inv.FunctionError = "Unhandled"
		}
	}
	return inv, nil
}

// newRequestID returns a random request id in the UUID form Lambda uses.
func newRequestID(t testing.TB) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Event reads an event fixture and replaces each {{NAME}} in it with
// vars[NAME].
func Event(t testing.TB, path string, vars map[string]string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range vars {
		s = strings.ReplaceAll(s, "{{"+k+"}}", v)
	}
	if i := strings.Index(s, "{{"); i >= 0 {
		t.Fatalf("%s: placeholder left at %q", path, s[i:min(len(s), i+20)])
	}
	return []byte(s)
}

// Seeded is what Seed put in a database.
type Seeded struct {
	// User is the user's name and UserID its id.
	User   string
	UserID int64
	// Key is the user's API key.
	Key string
}

// SeededDB makes a fresh migrated database for the test, opens a small pool
// on it and seeds it (see Seed). It returns the database's URL too, for the
// function under test.
func SeededDB(t testing.TB) (string, *pgxpool.Pool, Seeded) {
	t.Helper()
	url := dbtest.NewURL(t)
	pool, err := db.Open(context.Background(), db.PoolConfig{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return url, pool, Seed(t, pool)
}

// Seed creates the user "alice" with an API key, and the default dataset
// from the Go documentation of a few standard packages.
func Seed(t testing.TB, pool *pgxpool.Pool) Seeded {
	t.Helper()
	ctx := context.Background()
	var paths []string
	for _, p := range []string{"context", "sync", "time", "errors"} {
		paths = append(paths, filepath.Join(build.Default.GOROOT, "src", p))
	}
	docs, err := kb.FromPaths(paths)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, docs); err != nil {
		t.Fatal(err)
	}
	key, err := jobs.CreateKey(ctx, pool, "alice")
	if err != nil {
		t.Fatal(err)
	}
	id, err := jobs.UserID(ctx, pool, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return Seeded{User: "alice", UserID: id, Key: key}
}

// Backends counts the sessions of a database with the given
// application_name, and among them those whose last query was a LISTEN.
func Backends(t testing.TB, pool *pgxpool.Pool, appName string) (sessions, listening int) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE query ILIKE 'listen%')
		FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, appName).
		Scan(&sessions, &listening)
	if err != nil {
		t.Fatal(err)
	}
	return sessions, listening
}

// WaitNoBackends waits until the database has no session with the given
// application_name (a closed session takes the server a moment to end).
func WaitNoBackends(t testing.TB, pool *pgxpool.Pool, appName string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n, l := Backends(t, pool, appName)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions of %s still open (%d listening) %s after the invocation", n, appName, l, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
