package compact

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/llm"
)

// runStats is what the requests of a research cost in prompt tokens.
type runStats struct {
	steps   int
	batches int // steps whose request changed the prefix of the one before
	prompt  int // prompt tokens of all requests
	raw     int // the same without compaction
	cached  int // tokens of each request's prefix shared with the one before
	maxUsed int // the largest prompt
}

// replay fits every request of a research of n steps and checks each.
func replay(t *testing.T, n int, cfg Config, completionCap int) runStats {
	t.Helper()
	var st runStats
	var prev Result
	for s, req := range requests(research(n), completionCap) {
		res := Fit(req, cfg, 0)
		checkFit(t, req, cfg, 0, res)
		if !res.Fits {
			t.Fatalf("step %d: prompt %d does not fit the budget %d", s+1, res.Prompt, cfg.Budget(completionCap, 0))
		}
		st.steps++
		st.prompt += res.Prompt
		st.raw += llm.EstimatePromptTokens(req)
		st.maxUsed = max(st.maxUsed, res.Prompt)
		if s > 0 {
			old, cur := prev.Request.Messages, res.Request.Messages
			same := commonPrefix(old, cur)
			prefix := req
			prefix.Messages = cur[:same]
			st.cached += llm.EstimatePromptTokens(prefix)
			if same < len(old) {
				st.batches++
				for i := same; i < len(old); i++ {
					if !forward(old[i], cur[i]) {
						t.Fatalf("step %d: message %d changed other than by a new stub or a stub losing its passages: %q", s+1, i, cur[i].Content)
					}
				}
			}
			if res.Stubbed < prev.Stubbed {
				t.Fatalf("step %d: %d stubs after %d", s+1, res.Stubbed, prev.Stubbed)
			}
		}
		prev = res
	}
	return st
}

func isStub(s string) bool { return len(s) >= len(stubLead) && s[:len(stubLead)] == stubLead }

// forward reports whether cur, a message of a request, is old, the same
// message in the request before, or a step forward from it: a whole
// result stubbed, a stub that loses the passages it kept, a message of
// the agent's own cut to its start.
func forward(old, cur llm.Message) bool {
	switch {
	case reflect.DeepEqual(old, cur):
		return true
	case old.Role == llm.RoleTool && isStub(cur.Content):
		return !isStub(old.Content) || (strings.Contains(old.Content, "\n") && strings.HasPrefix(old.Content, cur.Content+"\n"))
	case old.Role == llm.RoleAssistant:
		return !isCut(old) && isCut(cur)
	}
	return false
}

// isCut reports whether m, an assistant message, was cut to its start.
func isCut(m llm.Message) bool {
	if strings.Contains(m.Content, "\n[Cut to save space: ") {
		return true
	}
	for _, c := range m.ToolCalls {
		if strings.Contains(string(c.Arguments), "[Cut to save space: ") {
			return true
		}
	}
	return false
}

// A 40-step research of 20,000-character pages stays within the working
// budget at every step, and its prompt prefix changes only when a batch of
// results is stubbed, which is rare when the window is large.
func TestResearchStaysWithinBudget(t *testing.T) {
	cases := []struct {
		name          string
		window, cap   int
		maxBatches    int
		wantCompacted bool
	}{
		{"128k", 128000, 4096, 8, true},
		{"16k", 16000, 2048, 40, true},
		{"1M", 1000000, 4096, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Window: c.window}
			st := replay(t, 40, cfg, c.cap)
			if st.batches > c.maxBatches {
				t.Errorf("%d batches in %d requests; want at most %d", st.batches, st.steps, c.maxBatches)
			}
			if compacted := st.prompt < st.raw; compacted != c.wantCompacted {
				t.Errorf("compacted %v (prompt %d, uncompacted %d); want %v", compacted, st.prompt, st.raw, c.wantCompacted)
			}
			if c.wantCompacted && st.batches == 0 {
				t.Errorf("no batch was stubbed")
			}
			t.Logf("%s window: %d requests, %d batches; prompt tokens %d in all (%d uncompacted), %d of them a prefix shared with the request before (%.0f%%), largest prompt %d of a budget of %d",
				c.name, st.steps, st.batches, st.prompt, st.raw, st.cached, 100*float64(st.cached)/float64(st.prompt), st.maxUsed, cfg.Budget(c.cap, 0))
		})
	}
}
