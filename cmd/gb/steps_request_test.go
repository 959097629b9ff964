package main

import (
	"context"
	"encoding/json"
	"go/build"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// sentModel is the offline model recording the system prompt and the tool
// names of every request it is sent.
type sentModel struct {
	offline.Model
	mu    sync.Mutex
	tools map[string][]string // system prompt: the tools sent with it
}

func (m *sentModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	m.mu.Lock()
	m.tools[req.System] = names
	m.mu.Unlock()
	return m.Model.Complete(ctx, req)
}

// TestStepsFullShowsTheRequest checks gb research steps --step N --full
// against a research with sub-agents: for the root and for each sub-agent,
// the system prompt and the tools the API rebuilds are the ones the
// step's model call was sent, byte for byte, and the table says they are
// rebuilt.
func TestStepsFullShowsTheRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: dbtest.NewURL(t), MaxConns: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	docs, err := kb.FromPaths([]string{filepath.Join(build.Default.GOROOT, "src", "sync"), filepath.Join(build.Default.GOROOT, "src", "context")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Load(ctx, pool, jobs.DefaultDataset, docs); err != nil {
		t.Fatal(err)
	}
	model := &sentModel{tools: map[string][]string{}}
	s := serveCLIStack(t, pool, jobs.Deps{Model: model}, httpapi.Deps{}, "steps-request")
	code, out, errOut := s.gb(t, s.key, "research", "start", "What does sync.Once guarantee? How does context carry deadlines?", "--follow")
	if code != 0 || !strings.Contains(out, "completed") {
		t.Fatalf("start --follow: exit %d\n%s\n%s", code, out, errOut)
	}
	id := strings.SplitN(out, "\n", 2)[0]
	_, out, _ = s.gb(t, s.key, "research", "list", "-o", "json")
	var page listPage
	if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Runs) < 3 {
		t.Fatalf("list: %v, %d runs; want the root and its sub-agents", err, len(page.Runs))
	}
	for _, r := range page.Runs {
		run := strconv.FormatInt(r.ID, 10)
		code, out, errOut := s.gb(t, s.key, "research", "steps", id, "--run", run, "--step", "1", "--full", "-o", "json")
		var p stepsPage
		if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.Request == nil {
			t.Fatalf("steps --run %s --step 1 --full -o json: exit %d, no request\n%s\n%s", run, code, out, errOut)
		}
		var names []string
		for _, tl := range p.Request.Tools {
			names = append(names, tl.Name)
			if tl.Description == "" || len(tl.Parameters) == 0 {
				t.Errorf("run %s: tool %s rebuilt without its description or parameters", run, tl.Name)
			}
		}
		model.mu.Lock()
		sent, ok := model.tools[p.Request.System]
		model.mu.Unlock()
		if !ok || !slices.Equal(sent, names) || p.Request.Rebuilt != jobs.RebuiltFrom || p.Request.Behaviour == "" {
			t.Errorf("run %s (%s): the rebuilt system prompt was sent: %v; tools sent %v, rebuilt %v; rebuilt says %q",
				run, agentName(&r), ok, sent, names, p.Request.Rebuilt)
		}
		if r.Name != "" && !strings.Contains(p.Request.System, r.Name) {
			t.Errorf("the rebuilt prompt of sub-agent %s does not name it:\n%s", r.Name, p.Request.System)
		}
		code, out, _ = s.gb(t, s.key, "research", "steps", id, "--run", run, "--step", "1", "--full")
		if code != 0 || !strings.Contains(out, "[system prompt, "+jobs.RebuiltFrom+" (bundle "+p.Request.Behaviour+")]") ||
			!strings.Contains(out, strings.SplitN(p.Request.System, "\n", 2)[0]) ||
			!strings.Contains(out, "[tools, "+jobs.RebuiltFrom+": "+strconv.Itoa(len(names))+"]") {
			t.Errorf("steps --run %s --step 1 --full: exit %d, no rebuilt prompt and tools:\n%s", run, code, out)
		}
		if strings.Contains(out, "note: the step called") {
			t.Errorf("run %s: the step called a tool the rebuilt list lacks:\n%s", run, out)
		}
	}
	// without --full, nothing is rebuilt
	_, out, _ = s.gb(t, s.key, "research", "steps", id, "--step", "1", "-o", "json")
	if strings.Contains(out, `"request"`) {
		t.Errorf("steps --step 1 without --full has a request:\n%s", out)
	}
}
