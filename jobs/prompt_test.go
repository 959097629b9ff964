package jobs_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// backtickedRE finds the names a prompt writes in backticks.
var backtickedRE = regexp.MustCompile("`([a-z_]+)`")

// allTools are the names of every tool, for telling a tool's name from
// other words in backticks.
var allTools = []string{"search", "read", "remember", "spawn_subagent", "wait_subagents", "cancel_subagent",
	"list_siblings", "send_message", "read_messages", "web_search", "fetch", "read_report", "send_input",
	"ask_owner", "propose_plan"}

// A run's system prompt names only the tools it is given, speaks of the
// sources it has (the knowledge base, the web, both), gives the spawning
// policy only to a run that may spawn, and states the report's length
// budget and the one Sources form; spawn_subagent describes each type
// with exactly the tools it would be given.
func TestPromptFollowsTools(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "surfer.md"), []byte("---\nname: surfer\ndescription: reads the web\n"+
		"tools: web_search, fetch\nmax_steps: 5\n---\nYou read the web.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	types, err := jobs.LoadTypes(dir)
	if err != nil {
		t.Fatal(err)
	}
	pool := dbtest.NewPool(t)
	web := &fakeWeb{}
	offlineAgent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}, Types: types})
	if err != nil {
		t.Fatal(err)
	}
	webAgent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}, Types: types, Search: web, Fetch: web,
		Messenger: withMessenger(t, pool)})
	if err != nil {
		t.Fatal(err)
	}
	parent := int64(1)
	root := &jobs.Run{ID: 1, RootID: 1, MaxSubagents: 3, MaxSteps: 10}
	sub := func(typ string) *jobs.Run {
		return &jobs.Run{ID: 2, RootID: 1, ParentID: &parent, Depth: 1, Name: "a", Reason: "part a", AgentType: typ,
			MaxSubagents: 3, MaxSteps: 10}
	}
	for _, tc := range []struct {
		name     string
		agent    *jobs.Service
		run      *jobs.Run
		sources  string
		spawns   bool
		siblings bool
	}{
		{"root, no web", offlineAgent, root, "the knowledge base.", true, false},
		{"root with the web", webAgent, root, "the knowledge base and the web.", true, false},
		{"researcher with the web", webAgent, sub("researcher"), "the knowledge base and the web.", true, true},
		{"reader, no web", offlineAgent, sub("reader"), "the knowledge base.", false, false},
		{"reader with the web", webAgent, sub("reader"), "the knowledge base and the web.", false, false},
		{"surfer", webAgent, sub("surfer"), "the web.", false, false},
	} {
		req, err := tc.agent.RequestForTest(tc.run)
		if err != nil {
			t.Fatal(err)
		}
		var given []string
		for _, tool := range req.Tools {
			given = append(given, tool.Name)
		}
		for _, m := range backtickedRE.FindAllStringSubmatch(req.System, -1) {
			if slices.Contains(allTools, m[1]) && !slices.Contains(given, m[1]) {
				t.Errorf("%s: the prompt names `%s`, not one of its tools %v", tc.name, m[1], given)
			}
		}
		if !strings.Contains(req.System, "Your sources: "+tc.sources) {
			t.Errorf("%s: the prompt does not say its sources: %s", tc.name, tc.sources)
		}
		if tc.sources == "the web." && strings.Contains(req.System, "knowledge base") {
			t.Errorf("%s: a web-only prompt speaks of a knowledge base:\n%s", tc.name, req.System)
		}
		if strings.Contains(req.System, strings.TrimSpace(prompts.Spawn)) != tc.spawns ||
			strings.Contains(req.System, "sub-agents of your own") != (tc.spawns && !tc.run.IsRoot()) {
			t.Errorf("%s: spawning policy given %v, want %v", tc.name, !tc.spawns, tc.spawns)
		}
		if strings.Contains(req.System, "`list_siblings`") != tc.siblings {
			t.Errorf("%s: siblings part given %v, want %v", tc.name, !tc.siblings, tc.siblings)
		}
		if !strings.Contains(req.System, "(4096 tokens)") || !strings.Contains(req.System, prompts.SourcesExample) ||
			strings.Count(req.System, "last step") != 0 {
			t.Errorf("%s: the prompt does not state the report's budget and Sources form:\n%s", tc.name, req.System)
		}
	}
	for _, tc := range []struct {
		agent *jobs.Service
		want  []string
	}{
		{offlineAgent, []string{"reader: reads and reports what its sources say; tools: search, read.", "surfer: reads the web; tools: none."}},
		{webAgent, []string{"reader: reads and reports what its sources say; tools: web_search, fetch, search, read.",
			"surfer: reads the web; tools: web_search, fetch.", "researcher: a full research agent (the default); tools: every tool"}},
	} {
		req, err := tc.agent.RequestForTest(root)
		if err != nil {
			t.Fatal(err)
		}
		desc := spawnTypeDescription(t, req)
		for _, w := range tc.want {
			if !strings.Contains(desc, w) {
				t.Errorf("spawn_subagent's types %q, want %q", desc, w)
			}
		}
	}
}

// spawnTypeDescription is the description of spawn_subagent's type.
func spawnTypeDescription(t *testing.T, req llm.Request) string {
	t.Helper()
	for _, tool := range req.Tools {
		if tool.Name != "spawn_subagent" {
			continue
		}
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil {
			t.Fatal(err)
		}
		return schema.Properties["type"].Description
	}
	t.Fatal("no spawn_subagent")
	return ""
}
