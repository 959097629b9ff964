package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

// commandPaths lists every command of gb, as the words that name it.
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	var out [][]string
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		p := append(append([]string{}, prefix...), sub.Name())
		out = append(out, p)
		out = append(out, commandPaths(sub, p)...)
	}
	return out
}

// TestEveryCommandAnswersHelp runs --help, -h and gb help on every command:
// each exits 0 and prints its usage, its flags and an example.
func TestEveryCommandAnswersHelp(t *testing.T) {
	t.Parallel()
	paths := append([][]string{{}}, commandPaths(newRootCmd(), nil)...)
	if len(paths) < 20 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, p := range paths {
		for _, form := range [][]string{append(p, "--help"), append(p, "-h"), append([]string{"help"}, p...)} {
			var out, errOut bytes.Buffer
			err := runWith(context.Background(), form, &out, &errOut)
			name := strings.TrimSpace("gb " + strings.Join(p, " "))
			got := out.String()
			if code := exitCode(err, false); code != exitOK {
				t.Errorf("%v: exit %d (%v), want 0", form, code, err)
			}
			if !strings.Contains(got, "Usage:\n  "+name) || !strings.Contains(got, "Flags:") {
				t.Errorf("%v: no usage of %q or no flags:\n%s", form, name, got)
			}
			if strings.HasPrefix(name, "gb completion") {
				continue // cobra's own, with its own examples
			}
			if !strings.Contains(got, "Examples:\n") {
				t.Errorf("%v: no example:\n%s", form, got)
			}
		}
	}
}

// TestUsageErrorsExitTwo checks that command lines gb cannot run exit 2
// with a one-line error that says what is allowed.
func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"resarch", "list"}, `unknown command "resarch" for "gb" (did you mean research?)`},
		{[]string{"reserch"}, "(did you mean research?)"},
		{[]string{"research", "lsit"}, `unknown gb research command "lsit" (did you mean list?)`},
		{[]string{"version", "-o", "yaml"}, `-o "yaml" is not an output format`},
		{[]string{"research", "frobnicate"}, "use one of start, list"},
		{[]string{"research", "get"}, "takes one run ID"},
		{[]string{"research", "get", "1", "2"}, "takes one run ID"},
		{[]string{"research", "list", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"research", "list", "--limit", "ten"}, "invalid argument"},
		{[]string{"keys", "revoke"}, "takes one key ID"},
		{[]string{"kb", "load", "godoc"}, "a DATASET and at least one PATH"},
		{[]string{"dev", "--river-ui", "--addr", "0.0.0.0:8080"}, "needs a loopback --addr"},
	} {
		var out, errOut bytes.Buffer
		err := runWith(context.Background(), c.args, &out, &errOut)
		if code := exitCode(err, false); code != exitUsage || err == nil ||
			!strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: exit %d, error %v; want exit 2 and one line with %q", c.args, code, err, c.want)
		}
	}
}

// TestVersionJSON checks gb version -o json (and --json): one object with
// the version, the commit and the Go version, the same as the line says.
func TestVersionJSON(t *testing.T) {
	t.Parallel()
	var line bytes.Buffer
	if err := runWith(context.Background(), []string{"version"}, &line, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, form := range [][]string{{"version", "-o", "json"}, {"version", "--json"}} {
		var out bytes.Buffer
		if err := runWith(context.Background(), form, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", form, err)
		}
		var v versionInfo
		dec := json.NewDecoder(&out)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%v: %v", form, err)
		}
		if v.Version == "" || v.Commit == "" || v.Go != runtime.Version() ||
			line.String() != fmt.Sprintf("gb %s (commit %s, %s)\n", v.Version, v.Commit, v.Go) {
			t.Errorf("%v = %+v; the line says %q", form, v, line.String())
		}
	}
}

// TestSignalCode checks the exit codes of a stop by a signal.
func TestSignalCode(t *testing.T) {
	t.Parallel()
	if got := signalCode(syscall.SIGTERM); got != 143 {
		t.Errorf("SIGTERM: %d, want 143", got)
	}
	if got := signalCode(os.Interrupt); got != 130 {
		t.Errorf("SIGINT: %d, want 130", got)
	}
}

// TestCompletesFlagValues checks the shell completion of the flags that
// take one of a few values and of plan's decision, with no API needed, and
// that every command of gb research that takes a run id completes one.
func TestCompletesFlagValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"research", "list", "--status", ""}, jobs.ListStatuses},
		{[]string{"research", "get", "1", "-o", ""}, []string{"table", "json"}},
		{[]string{"keys", "list", "--output", ""}, []string{"table", "json"}},
		{[]string{"research", "start", "topic", "--citations", ""}, jobs.CitationsModes},
		{[]string{"research", "steps", "1", "--order", ""}, []string{"desc", "asc"}},
		{[]string{"dev", "--messenger", ""}, []string{"postgres", "memory"}},
		{[]string{"research", "plan", "7", ""}, []string{"approve", "reject"}},
	} {
		var out bytes.Buffer
		if err := runWith(context.Background(), append([]string{"__complete"}, c.args...), &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := completed(out.String()); !slices.Equal(got, c.want) || !strings.HasSuffix(out.String(), ":4\n") {
			t.Errorf("%v completes %q (%q), want %q and no files", c.args, got, out.String(), c.want)
		}
	}
	research, _, err := newRootCmd().Find([]string{"research"})
	if err != nil {
		t.Fatal(err)
	}
	var withID int
	for _, sub := range research.Commands() {
		if strings.HasPrefix(sub.Use, sub.Name()+" ID") {
			withID++
			if sub.ValidArgsFunction == nil {
				t.Errorf("gb research %s takes a run id and does not complete it", sub.Name())
			}
		}
	}
	if withID < 12 {
		t.Errorf("only %d commands of gb research take a run id", withID)
	}
}

// TestEmptyTablesSayEmpty checks that a list with no rows says so after its
// header, and one with rows does not.
func TestEmptyTablesSayEmpty(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		print func(io.Writer) error
		none  string
	}{
		{func(w io.Writer) error { return printRuns(w, listPage{}) }, "no researches"},
		{func(w io.Writer) error { return printKeys(w, nil, "") }, "no keys"},
		{func(w io.Writer) error { return printEvents(w, nil) }, "no events"},
	} {
		var b strings.Builder
		if err := c.print(&b); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if len(lines) != 2 || lines[1] != c.none {
			t.Errorf("empty table:\n%s\nwant its header and %q", b.String(), c.none)
		}
	}
	var b strings.Builder
	if err := printRuns(&b, listPage{Runs: []jobs.Run{{ID: 1}}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "no researches") {
		t.Errorf("a list with a run says it has none:\n%s", b.String())
	}
}

// TestFitCutsByDisplayWidth checks truncation of wide and combined
// characters: the result is valid UTF-8, at most the width, and whole
// graphemes.
func TestFitCutsByDisplayWidth(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"goroutines and channels", 10, "goroutine…"},
		{"日本語のトピックです", 9, "日本語の…"},
		{"café crème brûlée", 12, "café crème…"},
		{"cafe\u0301s are good", 5, "cafe\u0301…"},
		{"👩‍👩‍👧 family tree", 4, "👩‍👩‍👧…"},
		{"multi\nline\ttext", 40, "multi line text"},
	} {
		got := fit(c.in, c.width)
		if got != c.want || !utf8.ValidString(got) || runewidth.StringWidth(got) > c.width {
			t.Errorf("fit(%q, %d) = %q (width %d), want %q", c.in, c.width, got, runewidth.StringWidth(got), c.want)
		}
	}
}

func TestDrawTree(t *testing.T) {
	t.Parallel()
	one, two := int64(1), int64(2)
	got := drawTree(treeResponse{Runs: []*jobs.Run{
		{ID: 1, Status: "working", State: "waiting", Steps: 2, MaxSteps: 10, Tokens: 100, CachedTokens: 40},
		{ID: 2, ParentID: &one, Name: "alpha", Status: "working", State: "thinking", Steps: 1, MaxSteps: 10,
			Tokens: 50, CachedTokens: 20, ReasoningTokens: 7},
		{ID: 3, ParentID: &one, Name: "beta", Status: "failed", State: "failed", Error: "budget exhausted"},
		{ID: 4, ParentID: &two, Name: "alpha-1", Status: "queued", State: "queued"},
	}, Totals: jobs.Totals{Runs: 4, Working: 3, Tokens: 150, CachedTokens: 60, ReasoningTokens: 7, EstimatedCalls: 2}})
	want := []string{
		"#1 root  working · waiting · 2/10 steps · 100 tok (40 cached) · $0.0000",
		"├── #2 alpha  working · thinking · 1/10 steps · 50 tok (20 cached, 7 reasoning)",
		"│   └── #4 alpha-1  queued · queued · 0/0 steps · 0 tok (0 cached) ·",
		"└── #3 beta  failed",
		"error: budget exhausted",
		"total: 4 agents (3 working) · 0 steps · 150 tokens (60 cached, 7 reasoning) · $0.0000 · 2 calls at their estimate",
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("tree lacks %q:\n%s", w, got)
		}
	}
}

// TestPrintDetailsShowsCachedTokens checks the get view: the run's cached
// tokens always, its reasoning tokens only when there are some, and the
// tree's and the sub-agents' usage.
func TestPrintDetailsShowsCachedTokens(t *testing.T) {
	t.Parallel()
	d := &jobs.RunDetails{Run: &jobs.Run{ID: 1, Status: "succeeded", State: "done", Tokens: 1200, PromptTokens: 1000,
		CompletionTokens: 200, CachedTokens: 600},
		Subagents: []jobs.SubagentSummary{{ID: 2, Name: "kid", Status: "succeeded", Tokens: 300, CachedTokens: 123}},
		Tree:      jobs.Totals{Runs: 2, Tokens: 1500, CachedTokens: 723, ReasoningTokens: 8, EstimatedCalls: 1}}
	var b strings.Builder
	if err := printDetails(&b, d); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, w := range []string{"600 of the prompt tokens", "1500 tokens (723 cached, 8 reasoning)", "1 call at its estimate", "CACHED", "123"} {
		if !strings.Contains(got, w) {
			t.Errorf("get view lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "of the completion tokens") {
		t.Errorf("get view shows reasoning tokens of a run that had none:\n%s", got)
	}
	d.ReasoningTokens = 55
	b.Reset()
	if err := printDetails(&b, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "55 of the completion tokens") {
		t.Errorf("get view lacks the reasoning tokens:\n%s", b.String())
	}
}

// TestPrintRunsHasACachedColumn checks the list's CACHED column.
func TestPrintRunsHasACachedColumn(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := printRuns(&b, listPage{Runs: []jobs.Run{{ID: 7, Status: "working", State: "thinking", Tokens: 900, CachedTokens: 321}}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	head, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	col := slices.Index(head, "CACHED")
	if col < 0 || col >= len(row) || row[col] != "321" || row[col-1] != "900" {
		t.Errorf("list has no CACHED column with 321 beside TOKENS 900:\n%s", b.String())
	}
}

func TestEventDetail(t *testing.T) {
	t.Parallel()
	got := eventDetail([]byte(`{"tool":"search","query":"wait group","n":3,"ok":true}`))
	if want := `n=3 ok=true query="wait group" tool=search`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
