package main

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs"
)

func TestParseArgsTakesFlagsAnywhere(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("research start", flag.ContinueOnError)
	follow := fs.Bool("follow", false, "")
	steps := fs.Int("max-steps", 0, "")
	pos, err := parseArgs(fs, []string{"--max-steps", "5", "a topic", "--follow"}, 1, 1, "TOPIC")
	if err != nil || len(pos) != 1 || pos[0] != "a topic" || !*follow || *steps != 5 {
		t.Fatalf("pos %q follow %v steps %d err %v", pos, *follow, *steps, err)
	}
	if _, err := parseArgs(flag.NewFlagSet("x", flag.ContinueOnError), []string{"a", "b"}, 1, 1, "ID"); err == nil {
		t.Fatal("two positionals accepted where one is allowed")
	}
}

func TestUnknownCommandIsOneLineError(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(context.Background(), []string{"frobnicate"}, &out)
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v", err)
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
