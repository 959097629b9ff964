package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/messenger"
)

// cliStack is an API with a working agent (offline model) over a database
// of its own, a user key, and a built gb.
type cliStack struct {
	url, key, bin string
	pool          *pgxpool.Pool
}

func startCLIStack(t *testing.T, delay time.Duration) *cliStack {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t), MaxConns: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	src := filepath.Join(build.Default.GOROOT, "src")
	docs, err := kb.FromPaths([]string{filepath.Join(src, "sync"), filepath.Join(src, "context")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, docs); err != nil {
		t.Fatal(err)
	}
	listener := messenger.NewListener(pool, nil)
	if err := listener.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Stop(context.Background()) })
	return serveCLIStack(t, pool, jobs.Deps{Model: &offline.Model{Delay: delay},
		Messenger: messenger.NewPostgres(pool, listener, messenger.PostgresConfig{})},
		httpapi.Deps{Notifier: listener}, "cli")
}

// serveCLIStack starts a working agent built from d on pool, with the API
// in front of it (api, its Agent set here), and a key for user: the stack
// the CLI's tests drive.
func serveCLIStack(t *testing.T, pool *pgxpool.Pool, d jobs.Deps, api httpapi.Deps, user string) *cliStack {
	t.Helper()
	ctx := context.Background()
	d.Pool, d.Work = pool, true
	agent, err := jobs.New(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = agent.Stop(sctx)
	})
	key, err := jobs.CreateKey(ctx, pool, user)
	if err != nil {
		t.Fatal(err)
	}
	api.Service = agent
	srv := httptest.NewServer(httpapi.New(api))
	t.Cleanup(srv.Close)
	return &cliStack{url: srv.URL, key: key, bin: buildGB(t), pool: pool}
}

// gb runs the built gb with the stack's API and key (key "-" unsets it).
func (s *cliStack) gb(t *testing.T, key string, a ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, a...)
	cmd.Env = append(os.Environ(), "GB_API_URL="+s.url, "GB_API_KEY="+key)
	if key == "-" {
		cmd.Env = append(os.Environ(), "GB_API_URL="+s.url, "GB_API_KEY=")
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running gb %v: %v", a, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// hasFields fails the test unless the JSON object at path in v has every
// field named.
func hasFields(t *testing.T, what string, obj any, fields ...string) {
	t.Helper()
	m, ok := obj.(map[string]any)
	if !ok {
		t.Errorf("%s: %T is not a JSON object", what, obj)
		return
	}
	for _, f := range fields {
		if _, ok := m[f]; !ok {
			t.Errorf("%s lacks the field %q: %v", what, f, m)
		}
	}
}

// TestCLIAgainstTheAPI drives the built gb against a real API: a research
// followed to its report, every read command's -o json holding its
// documented fields and its table its header, and each exit code produced
// by a real case.
func TestCLIAgainstTheAPI(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 20*time.Millisecond)

	code, out, errOut := s.gb(t, s.key, "research", "start", "How does sync.WaitGroup work?", "--follow")
	if code != 0 || !strings.Contains(out, "SEQ") || !strings.Contains(out, "completed") {
		t.Fatalf("start --follow: exit %d\n%s\n%s", code, out, errOut)
	}
	id := strings.SplitN(out, "\n", 2)[0]
	// The offline model's calls use no prompt cache and no reasoning: the
	// root is given some, and a call settled at its estimate, directly.
	rootID, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatalf("start printed %q, not a run id", id)
	}
	if _, err := s.pool.Exec(context.Background(), `UPDATE gb_agent_research_runs SET
		cached_tokens = 4242, reasoning_tokens = 99 WHERE id = $1`, rootID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(context.Background(), `INSERT INTO gb_model_calls
		(job_id, attempt, step, run_id, root_id, status, estimated) VALUES (0, 1, 1, $1, $1, 'settled', true)`, rootID); err != nil {
		t.Fatal(err)
	}

	jsonCases := []struct {
		args   []string
		list   string   // the array field holding the items
		top    []string // fields of the answer
		fields []string // fields of each item, or of the answer when list is ""
	}{
		{[]string{"research", "list", "-o", "json"}, "runs", []string{"runs"},
			[]string{"id", "parent_id", "root_id", "name", "topic", "status", "state", "steps", "max_steps", "tokens",
				"cached_tokens", "reasoning_tokens", "cost_usd", "created_at"}},
		{[]string{"research", "get", id, "--json"}, "", nil,
			[]string{"id", "topic", "status", "state", "report", "error", "cached_tokens", "reasoning_tokens",
				"states", "subagents", "tree", "elapsed"}},
		{[]string{"research", "tree", id, "-o", "json"}, "runs", []string{"runs", "totals"},
			[]string{"id", "parent_id", "name", "status", "state", "steps", "tokens", "cached_tokens", "reasoning_tokens", "cost_usd"}},
		{[]string{"research", "events", id, "-o", "json"}, "events", []string{"events", "next_after"},
			[]string{"seq", "n", "root_id", "run_id", "parent_id", "agent", "kind", "data", "at"}},
		{[]string{"research", "messages", id, "-o", "json"}, "messages", []string{"messages"}, nil},
		{[]string{"research", "sources", id, "--tree", "-o", "json"}, "sources", []string{"sources"}, nil},
	}
	for _, c := range jsonCases {
		code, out, errOut := s.gb(t, s.key, c.args...)
		var v map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Errorf("%v: exit %d, output is not JSON:\n%s\n%s", c.args, code, out, errOut)
			continue
		}
		hasFields(t, fmt.Sprint(c.args), v, c.top...)
		if c.list == "" {
			hasFields(t, fmt.Sprint(c.args), v, c.fields...)
			continue
		}
		items, _ := v[c.list].([]any)
		if len(items) == 0 && c.fields != nil {
			t.Errorf("%v: no %s", c.args, c.list)
		}
		for _, it := range items {
			hasFields(t, fmt.Sprintf("%v %s item", c.args, c.list), it, c.fields...)
		}
	}

	checkUsageJSON(t, s, id)

	for _, c := range []struct {
		args   []string
		header string
	}{
		{[]string{"research", "list"}, "ID  "},
		{[]string{"research", "list"}, "CACHED"},
		{[]string{"research", "get", id}, "FIELD"},
		{[]string{"research", "get", id}, "4242 of the prompt tokens"},
		{[]string{"research", "get", id}, "99 of the completion tokens"},
		{[]string{"research", "get", id}, "(4242 cached, 99 reasoning)"},
		{[]string{"research", "get", id}, "1 call at its estimate"},
		{[]string{"research", "tree", id}, "#" + id + " root"},
		{[]string{"research", "tree", id}, "tok (4242 cached, 99 reasoning)"},
		{[]string{"research", "tree", id}, "1 call at its estimate"},
		{[]string{"research", "events", id}, "SEQ"},
		{[]string{"research", "messages", id}, ""},
		{[]string{"research", "sources", id}, ""},
	} {
		if code, out, errOut := s.gb(t, s.key, c.args...); code != 0 || !strings.Contains(out, c.header) {
			t.Errorf("%v: exit %d, no %q in the table:\n%s\n%s", c.args, code, c.header, out, errOut)
		}
	}

	for _, c := range []struct {
		name string
		key  string
		args []string
		code int
		want string
	}{
		{"usage: bad output format", s.key, []string{"research", "list", "-o", "yaml"}, exitUsage, "not an output format"},
		{"usage: not a run id", s.key, []string{"research", "get", "abc"}, exitUsage, "not a run id"},
		{"auth: no key", "-", []string{"research", "list"}, exitAuth, "GB_API_KEY is not set"},
		{"auth: refused key", "gb_wrong", []string{"research", "list"}, exitAuth, "refused GB_API_KEY"},
		{"error: cancel an ended run", s.key, []string{"research", "cancel", id}, exitError, "already ended"},
		{"error: no such run", s.key, []string{"research", "get", "999999"}, exitError, "HTTP 404"},
	} {
		code, out, errOut := s.gb(t, c.key, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: %v exit %d (want %d), stderr %q (want %q)\n%s", c.name, c.args, code, c.code, errOut, c.want, out)
		}
	}
}

// checkUsageJSON checks that -o json carries the usage the API answers,
// unchanged: the root's cached and reasoning tokens (set by the test) in
// the run, its tree's totals and the list, and the estimated call.
func checkUsageJSON(t *testing.T, s *cliStack, id string) {
	t.Helper()
	read := func(args ...string) map[string]any {
		code, out, errOut := s.gb(t, s.key, args...)
		var v map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return v
	}
	want := func(what string, obj any, field string, n float64) {
		t.Helper()
		if m, _ := obj.(map[string]any); m == nil || m[field] != n {
			t.Errorf("%s: %s is %v, want %v", what, field, m[field], n)
		}
	}
	got := read("research", "get", id, "-o", "json")
	want("get", got, "cached_tokens", 4242)
	want("get", got, "reasoning_tokens", 99)
	want("get .tree", got["tree"], "cached_tokens", 4242)
	want("get .tree", got["tree"], "reasoning_tokens", 99)
	want("get .tree", got["tree"], "estimated_calls", 1)
	got = read("research", "tree", id, "-o", "json")
	want("tree .totals", got["totals"], "cached_tokens", 4242)
	want("tree .totals", got["totals"], "estimated_calls", 1)
	if runs, _ := got["runs"].([]any); len(runs) == 0 {
		t.Errorf("tree: no runs")
	} else {
		want("tree .runs[0]", runs[0], "cached_tokens", 4242)
	}
}

// TestCLITruncatesMultiByteNamesCleanly lists a research whose topic is
// long and multi-byte: the table cuts it with "…" and every line stays
// valid UTF-8.
func TestCLITruncatesMultiByteNamesCleanly(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 0)
	topic := strings.Repeat("日本語の同期とチャネル ", 12)
	if code, out, errOut := s.gb(t, s.key, "research", "start", topic); code != 0 {
		t.Fatalf("start: %d %s %s", code, out, errOut)
	}
	code, out, errOut := s.gb(t, s.key, "research", "list")
	if code != 0 || !strings.Contains(out, "…") {
		t.Fatalf("list: exit %d, no cut topic:\n%s\n%s", code, out, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		if !utf8.ValidString(line) {
			t.Errorf("line %q is not valid UTF-8", line)
		}
	}
}

// TestInterruptExits130 stops a follow of a working research with SIGINT
// and then another with SIGTERM: gb exits 130 for the first and 143 for the
// second, and says nothing of either on stderr.
func TestInterruptExits130(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 2*time.Second)
	code, out, errOut := s.gb(t, s.key, "research", "start", demoTopic)
	if code != 0 {
		t.Fatalf("start: %d %s %s", code, out, errOut)
	}
	for _, c := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, exitInterrupted}, {syscall.SIGTERM, exitTerminated}} {
		cmd := exec.Command(s.bin, "research", "events", strings.TrimSpace(out), "--follow")
		cmd.Env = append(os.Environ(), "GB_API_URL="+s.url, "GB_API_KEY="+s.key)
		var stdout, stderr syncBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "the first events", func() bool { return strings.Contains(stdout.String(), "queued") })
		if err := cmd.Process.Signal(c.sig); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if got := cmd.ProcessState.ExitCode(); got != c.want || stderr.String() != "" {
			t.Errorf("follow stopped by %v exited %d with stderr %q, want %d and nothing", c.sig, got, stderr.String(), c.want)
		}
	}
}

// TestCompletionAndEmptyLists drives the built gb against a real API: a
// user with no run gets a table that says so and JSON with an empty list;
// once they have runs, the completion of a run id offers theirs, newest
// first with their topics, and not another user's.
func TestCompletionAndEmptyLists(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 0)
	code, out, errOut := s.gb(t, s.key, "research", "list")
	if code != 0 || !strings.HasPrefix(out, "ID ") || !strings.Contains(out, "\nno researches\n") {
		t.Errorf("empty list: exit %d, stdout %q, stderr %q; want the header and \"no researches\"", code, out, errOut)
	}
	code, out, _ = s.gb(t, s.key, "research", "list", "-o", "json")
	var page map[string]any
	if err := json.Unmarshal([]byte(out), &page); code != 0 || err != nil {
		t.Fatalf("empty list -o json: exit %d, %v: %s", code, err, out)
	}
	if runs, ok := page["runs"].([]any); !ok || len(runs) != 0 || strings.Contains(out, "no researches") {
		t.Errorf("empty list -o json = %s, want runs: [] and no sentence", out)
	}
	other, err := jobs.CreateKey(context.Background(), s.pool, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	_, theirs, _ := s.gb(t, other, "research", "start", "a topic of someone else")
	var ids []string
	for _, topic := range []string{"first topic of mine", "second topic of mine"} {
		code, out, errOut := s.gb(t, s.key, "research", "start", topic)
		if code != 0 {
			t.Fatalf("start: %d %s %s", code, out, errOut)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	for _, line := range [][]string{
		{"__complete", "research", "get", ""},
		{"__complete", "research", "steps", "12", "--run", ""},
		{"__complete", "research", "list", "--parent", ""},
	} {
		code, out, errOut := s.gb(t, s.key, line...)
		if got := completed(out); code != 0 || len(got) != 2 || got[0] != ids[1] || got[1] != ids[0] ||
			!strings.Contains(out, "second topic of mine") || !strings.HasSuffix(out, ":4\n") {
			t.Errorf("%v: exit %d, stderr %q, got:\n%s\nwant runs %s then %s with their topics, not %s, and no file completion",
				line, code, errOut, out, ids[1], ids[0], strings.TrimSpace(theirs))
		}
	}
	code, out, _ = s.gb(t, s.key, "__complete", "research", "start", "x", "--notes-from", ids[0]+","+ids[1][:len(ids[1])-1])
	if code != 0 || !strings.Contains(out, ids[0]+","+ids[1]+"\t") {
		t.Errorf("--notes-from completes the last id of its list: got\n%s", out)
	}
	code, out, _ = s.gb(t, "-", "__complete", "research", "get", "")
	if code != 0 || out != ":4\n" {
		t.Errorf("completion without a key: exit %d, got %q; want nothing offered", code, out)
	}
}

// completed is the values a `gb __complete` offered, without their
// descriptions and its closing directive.
func completed(out string) []string {
	var vals []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if v, _, _ := strings.Cut(line, "\t"); v != "" && !strings.HasPrefix(v, ":") {
			vals = append(vals, v)
		}
	}
	return vals
}

// syncBuffer is a bytes.Buffer that a process writes while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
