package jobs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

func toolNames(req llm.Request) []string {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	return names
}

func TestReaderGetsItsAllowListAndBlockedCallsAreRecorded(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var offered []string
	var refused string
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		if topic(req) == "read it" {
			switch turns(req) {
			case 0:
				mu.Lock()
				offered = toolNames(req)
				mu.Unlock()
				return llm.Message{ToolCalls: []llm.ToolCall{toolCall("remember", `{"title":"t","text":"x"}`),
					toolCall("spawn_subagent", `{"name":"n","reason":"r","task":"t"}`)}}, nil
			case 1:
				mu.Lock()
				refused = stepResults(req)
				mu.Unlock()
			}
			return llm.Message{Content: "read"}, nil
		}
		switch turns(req) {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("spawn_subagent",
				`{"name":"r","reason":"reads","task":"read it","type":"reader","max_steps":40}`)}}, nil
		case 1:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
		}
		return llm.Message{Content: "done"}, nil
	}}
	b := setup(t, setupOpts{model: model})
	root, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, root.ID, 30*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	tree, _ := jobs.Tree(context.Background(), b.pool, root.ID)
	reader := tree[1]
	if reader.AgentType != "reader" || reader.MaxSteps != 10 {
		t.Errorf("reader run: type %q max_steps %d (its type caps it at 10)", reader.AgentType, reader.MaxSteps)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(offered, []string{"search", "read"}) {
		t.Errorf("a reader was offered %v, want exactly its allow-list [search read] (no web provider here)", offered)
	}
	for _, want := range []string{"a reader sub-agent may not call remember; its tools are: search, read",
		"a reader sub-agent may not call spawn_subagent; its tools are: search, read"} {
		if !strings.Contains(refused, want) {
			t.Errorf("refusal %q not in:\n%s", want, refused)
		}
	}
	if n := countEvents(t, b.pool, reader.ID, jobs.EventBlocked); n != 2 {
		t.Errorf("%d blocked events, want 2", n)
	}
}

func writeType(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

const sprinterType = `---
name: sprinter
description: researches against the clock
tools: all
max_steps: 40
wall_clock: 1s
---
You have one second.
`

func TestOperatorTypesLoadFromADirectoryAndBadOnesAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeType(t, dir, "sprinter.md", sprinterType)
	types, err := jobs.LoadTypes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := types.Names(); !slices.Equal(got, []string{"reader", "researcher", "sprinter"}) {
		t.Fatalf("types %v", got)
	}
	// The header is YAML: comments, quoted values and a list of tools.
	yamlDir := t.TempDir()
	writeType(t, yamlDir, "lister.md", "---\n# what it is for\nname: lister\ndescription: \"lists: what it finds\"\n"+
		"tools: [search, read]\nmax_steps: 5\n---\nList what you find.\n")
	yamlTypes, err := jobs.LoadTypes(yamlDir)
	if err != nil {
		t.Fatal(err)
	}
	if lt, ok := yamlTypes.Get("lister"); !ok || lt.Description != "lists: what it finds" || !slices.Equal(lt.Tools, []string{"search", "read"}) {
		t.Fatalf("a YAML header: %+v", lt)
	}
	for _, tc := range []struct{ file, text, want string }{
		{"twice.md", strings.Replace(sprinterType, "max_steps: 40", "max_steps: 40\nname: again", 1), "twice.md: name: given twice"},
		{"yaml.md", strings.Replace(sprinterType, "max_steps: 40", "max_steps: [40", 1), "yaml.md: header: not YAML"},
		{"nested.md", strings.Replace(sprinterType, "tools: all", "tools:\n  web: yes", 1), "nested.md: tools: must be a value or a list"},
		{"notool.md", strings.Replace(sprinterType, "tools: all", "tools: search, teleport", 1), `notool.md: tools: "teleport" is not a tool`},
		{"noname.md", strings.Replace(sprinterType, "name: sprinter\n", "", 1), "noname.md: name: is required"},
		{"clock.md", strings.Replace(sprinterType, "wall_clock: 1s", "wall_clock: soon", 1), `clock.md: wall_clock: "soon" must be a duration`},
		{"steps.md", strings.Replace(sprinterType, "max_steps: 40", "max_steps: 99", 1), `steps.md: max_steps: "99" must be a whole number from 1 to 40`},
		{"dup.md", strings.Replace(sprinterType, "name: sprinter", "name: reader", 1), `dup.md: name: "reader" is already a type`},
		{"header.md", "no header at all", "header.md: header: the file must start with a --- line"},
		{"field.md", strings.Replace(sprinterType, "max_steps: 40", "max_steps: 40\ncolour: red", 1), "field.md: colour: unknown field"},
	} {
		bad := t.TempDir()
		writeType(t, bad, tc.file, tc.text)
		if _, err := jobs.LoadTypes(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.file, err, tc.want)
		}
	}
}

func TestSubagentPastItsWallClockEndsTimedOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeType(t, dir, "sprinter.md", sprinterType)
	types, err := jobs.LoadTypes(dir)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var waitResult string
	model := &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		switch topic(req) {
		case "think forever": // in its model call when the clock runs out
			<-ctx.Done()
			return llm.Message{}, ctx.Err()
		case "delegate": // parked on a sub-agent when the clock runs out
			if turns(req) == 0 {
				return llm.Message{ToolCalls: []llm.ToolCall{toolCall("spawn_subagent",
					`{"name":"deep","reason":"goes deep","task":"think forever"}`)}}, nil
			}
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
		}
		switch turns(req) {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{
				toolCall("spawn_subagent", `{"name":"busy","reason":"thinks","task":"think forever","type":"sprinter"}`),
				toolCall("spawn_subagent", `{"name":"boss","reason":"delegates","task":"delegate","type":"sprinter"}`)}}, nil
		case 1:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
		}
		mu.Lock()
		waitResult = stepResults(req)
		mu.Unlock()
		return llm.Message{Content: "done"}, nil
	}}
	b := setup(t, setupOpts{noWork: true})
	startAgent(t, jobs.Deps{Pool: b.pool, Model: model, Types: types})
	root, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, root.ID, 30*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("root %s %q", done.Status, done.Error)
	}
	tree, _ := jobs.Tree(context.Background(), b.pool, root.ID)
	for _, r := range tree[1:] {
		t.Logf("%s: %s %q", r.Name, r.Status, r.Error)
		switch r.Name {
		case "busy", "boss":
			if r.Status != jobs.StatusTimedOut || !strings.Contains(r.Error, "timed out: its wall-clock cap of 1s passed") {
				t.Errorf("%s ended %s %q, want timed_out", r.Name, r.Status, r.Error)
			}
			// The status and error say the cap ended it; how soon after
			// the cap is not asserted, only that it was not before.
			t.Logf("%s ended %s after its cap", r.Name, r.EndedAt.Sub(*r.Deadline))
			if r.EndedAt.Before(*r.Deadline) {
				t.Errorf("%s ended at %s, before its cap at %s", r.Name, *r.EndedAt, *r.Deadline)
			}
		case "deep":
			if r.Status != jobs.StatusFailed || r.Error != jobs.CancelledByParent {
				t.Errorf("deep ended %s %q, want cancelled by its parent's end", r.Name, r.Error)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(waitResult, "## busy (run") || !strings.Contains(waitResult, ": timed_out\nerror: timed out") {
		t.Errorf("the parent's wait result does not show the time-out:\n%s", waitResult)
	}
}

func TestSpawningOffForAUserOffersNoSpawnTools(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var offered [][]string
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		mu.Lock()
		offered = append(offered, toolNames(req))
		mu.Unlock()
		return llm.Message{Content: "report"}, nil
	}}
	b := setup(t, setupOpts{model: model})
	ctx := context.Background()
	if err := jobs.SetUserMaxSubagents(ctx, b.pool, "alice", new(int)); err != nil {
		t.Fatal(err)
	}
	if err := jobs.SetUserMaxSubagents(ctx, b.pool, "alice", ptr(11)); err == nil {
		t.Fatal("11 sub-agents accepted above the ceiling of 10")
	}
	off, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "no spawning"})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, b.pool, off.ID, 20*time.Second)
	if err := jobs.SetUserMaxSubagents(ctx, b.pool, "alice", ptr(2)); err != nil {
		t.Fatal(err)
	}
	two, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "two at most"})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, b.pool, two.ID, 20*time.Second)
	if two, _ = jobs.GetRun(ctx, b.pool, two.ID); two.MaxSubagents != 2 {
		t.Errorf("the second research may have %d sub-agents, want 2", two.MaxSubagents)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(offered[0], "spawn_subagent") || slices.Contains(offered[0], "wait_subagents") {
		t.Errorf("with spawning off a root was offered %v", offered[0])
	}
	if !slices.Contains(offered[1], "spawn_subagent") {
		t.Errorf("with 2 sub-agents allowed a root was offered %v", offered[1])
	}
	// The bound holds against concurrent spawns too (the tree's limit
	// check under the root's lock): a third spawn is refused.
	for i, want := range []string{"", "", "at most 2 sub-agents in all"} {
		_, err := b.agent.SpawnForTest(ctx, two.ID, jobs.SpawnParams{Name: fmt.Sprintf("s%d", i), Reason: "r", Task: "t"})
		if (err == nil) != (want == "") || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("spawn %d: %v, want %q", i, err, want)
		}
	}
}

func ptr(n int) *int { return &n }

// pricedModel is a scripted model of its own name and price per call.
type pricedModel struct {
	scriptModel
	name  string
	price float64
}

func (m *pricedModel) Name() string { return m.name }

func (m *pricedModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := m.scriptModel.Complete(ctx, req)
	resp.Usage.CostUSD = m.price
	return resp, err
}

func TestSubagentOnASecondModelPaysItsPrice(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var refused string
	script := func(_ context.Context, req llm.Request) (llm.Message, error) {
		if topic(req) == "on beta" {
			return llm.Message{Content: "beta's report"}, nil
		}
		switch turns(req) {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{
				toolCall("spawn_subagent", `{"name":"b","reason":"needs the bigger model","task":"on beta","model":"beta"}`),
				toolCall("spawn_subagent", `{"name":"c","reason":"wants another","task":"on gamma","model":"gamma"}`)}}, nil
		case 1:
			mu.Lock()
			refused = stepResults(req)
			mu.Unlock()
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
		}
		return llm.Message{Content: "done"}, nil
	}
	alpha := &pricedModel{scriptModel{fn: script}, "alpha", 0.001}
	beta := &pricedModel{scriptModel{fn: script}, "beta", 0.25}
	b := setup(t, setupOpts{noWork: true})
	a := startAgent(t, jobs.Deps{Pool: b.pool, Model: alpha, Models: []llm.Model{alpha, beta}})
	root, _, err := a.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, root.ID, 30*time.Second); done.Status != jobs.StatusSucceeded || done.Model != "alpha" {
		t.Fatalf("%s %q on %s", done.Status, done.Error, done.Model)
	}
	tree, _ := jobs.Tree(context.Background(), b.pool, root.ID)
	if len(tree) != 2 || tree[1].Model != "beta" || tree[1].CostUSD != 0.25 || tree[0].CostUSD != 0.003 {
		t.Fatalf("runs: %+v", tree)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(refused, `Error: model "gamma" is not allowed; the models are: alpha, beta`) {
		t.Errorf("an unknown model was not refused with the list:\n%s", refused)
	}
}
