package jobs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// systems records the system prompts a model was sent, by the topic of
// the run that sent them, and the tools of each as JSON.
type systems struct {
	mu    sync.Mutex
	sent  map[string][]string
	tools map[string][]string
}

func newSystems() *systems {
	return &systems{sent: map[string][]string{}, tools: map[string][]string{}}
}

func (s *systems) add(req llm.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(req.Tools)
	s.sent[topic(req)] = append(s.sent[topic(req)], req.System)
	s.tools[topic(req)] = append(s.tools[topic(req)], string(b))
}

func (s *systems) of(topic string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent[topic]
}

func (s *systems) toolsOf(topic string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools[topic]
}

// A deploy mid-research: the first worker makes the root's steps 1 and 2
// and stops; a worker of a new deploy, whose research prompt differs and
// whose agent types directory gives the operator's type "analyst" another
// prompt, makes the rest (step 3 spawns an analyst, which reports, then
// the root reports). Pinned (GB_PIN=run, the default), the root's later
// steps and its sub-agent keep the first deploy's prompts and type, and
// the run stays on the first deploy's bundle; with GB_PIN=latest they take
// the new ones, and step 3 records the move from the one bundle to the
// other. Each step records the gb version whose code made it and the
// bundle it used.
func TestDeployMidResearch(t *testing.T) {
	t.Parallel()
	const newPrompt = "You are a research agent of the second deploy: its prompt says so."
	for _, mode := range []string{"", jobs.PinLatest} {
		t.Run("pin="+mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := dbtest.NewPool(t)
			b := setupOn(t, pool, setupOpts{noWork: true})
			first, second := newSystems(), newSystems()
			inStep2, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			old := &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
				first.add(req)
				if turns(req) == 1 {
					once.Do(func() { close(inStep2) })
					select {
					case <-release:
					case <-ctx.Done():
						return llm.Message{}, ctx.Err()
					}
				}
				return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", `{"query":"context deadline"}`)}}, nil
			}}
			a := startAgent(t, jobs.Deps{Pool: pool, Model: old, Version: "gb-one", Types: analystTypes(t, "one"),
				Config: jobs.Config{Pin: mode}})
			run, _, err := a.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: "deadlines"})
			if err != nil {
				t.Fatal(err)
			}
			<-inStep2
			stopped := make(chan error, 1)
			go func() {
				sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				stopped <- a.Stop(sctx)
			}()
			waitFor(t, 5*time.Second, "the first worker to stop fetching", func() bool { return a.Stopping() })
			close(release)
			if err := <-stopped; err != nil {
				t.Fatal(err)
			}
			mid, err := jobs.GetRun(ctx, pool, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			_, oldHash := a.Behaviour()
			if mid.Steps != 2 || mid.Pinned != oldHash {
				t.Fatalf("after the first worker: step %d, pinned %q; want 2 and %q", mid.Steps, mid.Pinned, oldHash)
			}

			// The deploy: a new worker with another research prompt.
			set := prompts.Embedded()
			set.Research = newPrompt
			model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
				second.add(req)
				switch {
				case topic(req) == "part one" || !req.MayCallTools() || turns(req) >= 4:
					return llm.Message{Content: "report of " + topic(req)}, nil
				case turns(req) == 2:
					return llm.Message{ToolCalls: []llm.ToolCall{
						toolCall("spawn_subagent", `{"name":"one","reason":"first part","task":"part one","type":"analyst"}`)}}, nil
				}
				return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
			}}
			nb := startAgent(t, jobs.Deps{Pool: pool, Model: model, Version: "gb-two", Prompts: set,
				Types: analystTypes(t, "two"), Config: jobs.Config{Pin: mode}})
			_, newHash := nb.Behaviour()
			if newHash == oldHash {
				t.Fatal("a new research prompt left the bundle's hash as it was")
			}
			done := waitEnded(t, pool, run.ID, 30*time.Second)
			if done.Status != jobs.StatusSucceeded || done.Steps != 5 {
				t.Fatalf("%s after %d steps: %q", done.Status, done.Steps, done.Error)
			}

			want, wantHash, analyst := prompts.Research, oldHash, "analyst of deploy one"
			if mode == jobs.PinLatest {
				want, wantHash, analyst = newPrompt, newHash, "analyst of deploy two"
			}
			for _, s := range second.of("part one") {
				if !strings.Contains(s, analyst) {
					t.Fatalf("pin=%q: the analyst's request does not say %q:\n%s", mode, analyst, s)
				}
			}
			for _, s := range first.of("deadlines") {
				if !strings.HasPrefix(s, strings.TrimSpace(prompts.Research)) {
					t.Fatalf("the first deploy's request does not start with its prompt:\n%.200s", s)
				}
			}
			for who, sent := range map[string][]string{"root": second.of("deadlines"), "sub-agent": second.of("part one")} {
				if len(sent) == 0 {
					t.Fatalf("the %s made no call on the new deploy", who)
				}
				for _, s := range sent {
					if !strings.HasPrefix(s, strings.TrimSpace(want)) || (mode != jobs.PinLatest && strings.Contains(s, newPrompt)) {
						t.Fatalf("pin=%q: a request of the %s on the new deploy starts\n%.120s\nwant\n%.120s", mode, who, s, want)
					}
				}
			}
			// Pinned, the root's request on the new deploy is byte for byte
			// the one its last step on the old deploy sent: its system prompt
			// and its tools' schemas (read back from Postgres).
			if mode != jobs.PinLatest {
				before, after := first.of("deadlines"), second.of("deadlines")
				if before[len(before)-1] != after[0] {
					t.Fatalf("the pinned system prompt changed across the deploy:\n%s\n---\n%s", before[len(before)-1], after[0])
				}
				tb, ta := first.toolsOf("deadlines"), second.toolsOf("deadlines")
				if tb[len(tb)-1] != ta[0] {
					t.Fatalf("the pinned tool schemas changed across the deploy:\n%s\n---\n%s", tb[len(tb)-1], ta[0])
				}
			}
			child, err := pool.Query(ctx, `SELECT pinned FROM gb_agent_research_runs WHERE parent_id = $1`, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			var pins []string
			for child.Next() {
				var p string
				if err := child.Scan(&p); err != nil {
					t.Fatal(err)
				}
				pins = append(pins, p)
			}
			if done.Pinned != wantHash || len(pins) != 1 || pins[0] != wantHash {
				t.Fatalf("root pinned to %.12s, sub-agents %v; want %.12s", done.Pinned, pins, wantHash)
			}

			// Each step's version and bundle.
			rows, err := pool.Query(ctx, `SELECT step, version, behaviour FROM gb_agent_research_steps
				WHERE run_id = $1 ORDER BY step`, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for rows.Next() {
				var step int
				var version, bundle string
				if err := rows.Scan(&step, &version, &bundle); err != nil {
					t.Fatal(err)
				}
				got = append(got, version+"/"+jobs.ShortHash(bundle))
			}
			o, n := "gb-one/"+jobs.ShortHash(oldHash), "gb-two/"+jobs.ShortHash(wantHash)
			if w := []string{o, o, n, n, n}; strings.Join(got, " ") != strings.Join(w, " ") {
				t.Fatalf("steps' versions\n got %v\nwant %v", got, w)
			}

			// The step inspector of a third deploy, which holds neither
			// bundle, rebuilds each step as it was sent: with the bundle
			// the step recorded, whatever the pin says.
			third := prompts.Embedded()
			third.Research = "A third deploy's prompt."
			reader, err := jobs.New(jobs.Deps{Pool: pool, Model: model, Version: "gb-three", Prompts: third,
				Types: analystTypes(t, "three"), Config: jobs.Config{Pin: mode}})
			if err != nil {
				t.Fatal(err)
			}
			sent, sentTools := append(first.of("deadlines"), second.of("deadlines")...),
				append(first.toolsOf("deadlines"), second.toolsOf("deadlines")...)
			if len(sent) != done.Steps {
				t.Fatalf("%d root calls for %d steps", len(sent), done.Steps)
			}
			for step := 1; step <= done.Steps; step++ {
				req, err := reader.RebuildRequest(ctx, done, step)
				if err != nil {
					t.Fatal(err)
				}
				tools, _ := json.Marshal(req.Tools)
				if req.System != sent[step-1] || string(tools) != sentTools[step-1] {
					t.Fatalf("pin=%q: step %d rebuilt by another deploy differs from what it was sent:\n%.200s\n---\n%.200s",
						mode, step, req.System, sent[step-1])
				}
			}

			// The move, said once, by the step that made it.
			events, err := jobs.Events(ctx, pool, run.ID, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var moves []map[string]any
			for _, e := range events {
				if e.Kind == jobs.EventVersion {
					var d map[string]any
					if err := json.Unmarshal(e.Data, &d); err != nil {
						t.Fatal(err)
					}
					moves = append(moves, d)
				}
			}
			switch {
			case mode != jobs.PinLatest && len(moves) != 0:
				t.Fatalf("a pinned run moved: %v", moves)
			case mode == jobs.PinLatest && (len(moves) != 1 || moves[0]["from"] != oldHash || moves[0]["to"] != newHash ||
				moves[0]["step"] != float64(3)):
				t.Fatalf("moves %v; want one at step 3 from %.12s to %.12s", moves, oldHash, newHash)
			}

			// The run's details show its version.
			d, err := jobs.Details(ctx, pool, b.userID, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			bundleBy := "gb-one"
			if mode == jobs.PinLatest {
				bundleBy = "gb-two"
			}
			if d.Version.Pinned != jobs.ShortHash(wantHash) || d.Version.BundleVersion != bundleBy || d.Version.LastStep != "gb-two" {
				t.Fatalf("details' version %+v", d.Version)
			}
		})
	}
}

// analystTypes is a types directory with the operator's type "analyst",
// whose prompt names the deploy.
func analystTypes(t *testing.T, deploy string) *jobs.Types {
	t.Helper()
	dir := t.TempDir()
	text := "---\nname: analyst\ndescription: analyses a part\ntools: search, read\nmax_steps: 5\n---\n" +
		"You are the analyst of deploy " + deploy + ".\n"
	if err := os.WriteFile(filepath.Join(dir, "analyst.md"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	types, err := jobs.LoadTypes(dir)
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// GB_PIN takes run or latest; anything else is refused by name.
func TestPinModeChecked(t *testing.T) {
	t.Parallel()
	_, err := jobs.New(jobs.Deps{Pool: dbtest.NewPool(t), Model: &scriptModel{}, Config: jobs.Config{Pin: "newest"}})
	if err == nil || !strings.Contains(err.Error(), `"newest" is not a pin mode; the modes are run and latest`) {
		t.Fatalf("Pin newest: %v", err)
	}
}
