package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

// cappedModel searches once, then writes its report in a step that may
// call tools, honouring each call's completion cap as a provider does: a
// reply longer than the cap (four characters a token) is cut there, with
// finish reason length. It keeps the caps it was sent.
type cappedModel struct {
	report string
	mu     sync.Mutex
	caps   []int
	system string
}

func (m *cappedModel) Name() string { return "capped" }

func (m *cappedModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.caps = append(m.caps, req.MaxCompletionTokens)
	m.system = req.System
	m.mu.Unlock()
	if turns(req) == 0 {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "search", Arguments: []byte(`{"query":"http server shutdown"}`)}}},
			Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 10}}, nil
	}
	out, finish := m.report, llm.FinishStop
	if max := 4 * req.MaxCompletionTokens; len(out) > max {
		out, finish = out[:max], llm.FinishLength
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: out}, FinishReason: finish,
		Usage: llm.Usage{PromptTokens: 100, CompletionTokens: len(out) / 4}}, nil
}

// longReport is a report of about tokens tokens (four characters each).
func longReport(tokens int) string {
	var b strings.Builder
	b.WriteString("# Graceful shutdown\n\n")
	for i := 1; b.Len() < 4*tokens; i++ {
		fmt.Fprintf(&b, "Paragraph %d: Server.Shutdown stops the listeners, closes idle connections and waits "+
			"for active ones to return to idle before it returns.\n\n", i)
	}
	return b.String()
}

// A report of 2,500 tokens written in a step that may call tools is cut at
// the step's cap (1,024), and the step after, with the report's cap
// (4,096), writes it again: it is stored whole. The prompt states the
// report's length budget.
func TestReportWrittenInFull(t *testing.T) {
	model := &cappedModel{report: longReport(2500)}
	b := setup(t, setupOpts{model: model, config: jobs.Config{JudgeOff: true}})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID,
		Topic: "How does net/http shut a server down gracefully?", Citations: jobs.CitationsOff})
	if err != nil {
		t.Fatal(err)
	}
	run = waitEnded(t, b.pool, run.ID, 30*time.Second)
	if run.Status != jobs.StatusSucceeded || run.Report != model.report {
		t.Fatalf("%s (%s) after %d steps: a report of %d characters, want the whole %d", run.Status, run.Error, run.Steps,
			len(run.Report), len(model.report))
	}
	if fmt.Sprint(model.caps) != fmt.Sprint([]int{jobs.StepCapDefault, jobs.StepCapDefault, jobs.ReportCapDefault}) {
		t.Errorf("caps %v, want a step's, a step's, then the report's", model.caps)
	}
	if !strings.Contains(model.system, fmt.Sprintf("%d tokens", jobs.ReportCapDefault)) {
		t.Errorf("the prompt does not state the report's length budget:\n%s", model.system)
	}
	t.Logf("%d steps, caps %v, a report of %d characters stored whole", run.Steps, model.caps, len(run.Report))
}
