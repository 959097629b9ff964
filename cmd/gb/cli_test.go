package main

import (
	"bytes"
	"context"
	"strings"
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
		{[]string{"research", "frobnicate"}, "use one of start, list"},
		{[]string{"research", "get"}, "takes one run ID"},
		{[]string{"research", "get", "1", "2"}, "takes one run ID"},
		{[]string{"research", "list", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"research", "list", "--limit", "ten"}, "invalid argument"},
		{[]string{"keys", "create"}, `"user" not set`},
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
		{ID: 1, Status: "working", State: "waiting", Steps: 2, MaxSteps: 10, Tokens: 100},
		{ID: 2, ParentID: &one, Name: "alpha", Status: "working", State: "thinking", Steps: 1, MaxSteps: 10},
		{ID: 3, ParentID: &one, Name: "beta", Status: "failed", State: "failed", Error: "budget exhausted"},
		{ID: 4, ParentID: &two, Name: "alpha-1", Status: "queued", State: "queued"},
	}, Totals: jobs.Totals{Runs: 4, Working: 3, Tokens: 100}})
	want := []string{
		"#1 root  working · waiting · 2/10 steps · 100 tok · $0.0000",
		"├── #2 alpha  working · thinking · 1/10 steps",
		"│   └── #4 alpha-1  queued",
		"└── #3 beta  failed",
		"error: budget exhausted",
		"total: 4 agents (3 working)",
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("tree lacks %q:\n%s", w, got)
		}
	}
}

func TestEventDetail(t *testing.T) {
	t.Parallel()
	got := eventDetail([]byte(`{"tool":"search","query":"wait group","n":3,"ok":true}`))
	if want := `n=3 ok=true query="wait group" tool=search`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
