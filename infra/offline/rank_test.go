package offline

import (
	"context"
	"encoding/json"
	"fmt"
	"go/build"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

func TestFocusQueryAndTitles(t *testing.T) {
	t.Parallel()
	wg := newFocus("How does sync.WaitGroup work? Bring back the key facts with their sources.")
	if got := wg.query(8); got != "sync or waitgroup" {
		t.Errorf("query %q", got)
	}
	if wg.question != "How does sync.WaitGroup work?" || !wg.idents["WaitGroup"] {
		t.Errorf("focus %+v", wg)
	}
	demo := newFocus("How do goroutines and channels synchronize work, and how does the context package carry " +
		"cancellation and deadlines, and how does net/http serve HTTP requests?")
	goroutines := newFocus("How do goroutines and channels synchronize work?")
	for _, c := range []struct {
		f           *focus
		title       string
		atLeast, lt float64
	}{
		{wg, "package sync", 10, 11}, {wg, "package testing/synctest", 0, 0.5}, {wg, "package sync/atomic", 0, 0.5},
		{wg, "package compress/flate", 0, 0.5},
		{demo, "package context", 10, 11}, {demo, "package net/http", 10, 11}, {demo, "package net/http/httputil", 0, 5},
		{demo, "package runtime/metrics", 0, 0.5}, {demo, "package net/rpc", 0, 0.5}, {demo, "package runtime/pprof", 0, 0.5},
		{goroutines, "package sync", 1, 5}, {goroutines, "package runtime/pprof", 0, 0.5},
		{goroutines, "Finding on goroutines", 1, 2},
	} {
		if got := c.f.titleScore(c.title); got < c.atLeast || got >= c.lt {
			t.Errorf("titleScore(%q) for %q = %v, want [%v, %v)", c.title, c.f.question, got, c.atLeast, c.lt)
		}
	}
}

// TestWaitGroupReport gives the policy the whole documentation of package
// sync: its report on sync.WaitGroup reads sync before the package that
// only mentions WaitGroups, and says what Add, Done and Wait do.
func TestWaitGroupReport(t *testing.T) {
	t.Parallel()
	docs, err := kb.FromPaths([]string{filepath.Join(build.Default.GOROOT, "src", "sync")})
	if err != nil || len(docs) == 0 || docs[0].Title != "package sync" {
		t.Fatalf("%v %+v", err, docs)
	}
	results := map[string]string{
		"search": "[id 3] package testing/synctest (https://pkg.go.dev/testing/synctest)\nA sync.WaitGroup becomes associated with a bubble.\n\n" +
			"[id 4] package sync (https://pkg.go.dev/sync)\nPackage sync provides basic synchronization primitives.",
		"read": fmt.Sprintf("[id 4] package sync (https://pkg.go.dev/sync)\n\n%s", docs[0].Body),
	}
	tools := []llm.ToolSpec{{Name: "search"}, {Name: "read"}}
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "How does sync.WaitGroup work?"}}
	m := &Model{}
	for turn := 0; turn < 6; turn++ {
		resp, err := m.Complete(context.Background(), llm.Request{Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			checkWaitGroupReport(t, resp.Message.Content)
			return
		}
		for _, c := range resp.Message.ToolCalls {
			if c.Name == "read" && !json.Valid(c.Arguments) || c.Name == "read" && string(c.Arguments) != `{"id":4}` {
				t.Fatalf("read %s, want sync (id 4) and only it", c.Arguments)
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: results[c.Name]})
		}
	}
	t.Fatal("no report after 6 turns")
}

func checkWaitGroupReport(t *testing.T, report string) {
	t.Helper()
	t.Logf("report:\n%s", report)
	findings, sources, _ := strings.Cut(report, "## Sources")
	for _, w := range []string{"Add", "Done", "Wait"} {
		if !regexp.MustCompile(`\b` + w + `\b`).MatchString(findings) {
			t.Errorf("the report never mentions %s:\n%s", w, report)
		}
	}
	if strings.TrimSpace(sources) != "[1] package sync — https://pkg.go.dev/sync" {
		t.Errorf("sources:\n%s", sources)
	}
}
