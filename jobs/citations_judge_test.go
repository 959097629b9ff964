package jobs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/cite"
	"github.com/gbresearch/gb/jobs/llm"
)

// judgeModel is a verification model that answers by the claim it is
// asked about, and counts its calls.
type judgeModel struct {
	mu    sync.Mutex
	calls []string
}

func (m *judgeModel) Name() string { return "verify" }

func (m *judgeModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	q := req.Messages[len(req.Messages)-1].Content
	m.mu.Lock()
	m.calls = append(m.calls, q)
	m.mu.Unlock()
	answer := "no"
	if strings.Contains(q, "Reading a variable") {
		answer = "Yes."
	}
	if req.MaxCompletionTokens > 16 || req.System == "" || !strings.Contains(q, "UNTRUSTED") {
		answer = "malformed request"
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: answer},
		Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 1}}, nil
}

// With a verification model, each claim the lexical test leaves weak gets
// one call of it, in the ledger and on the run's usage: its yes makes the
// claim supported, its no unsupported; a supported claim is not asked.
func TestCitationsJudge(t *testing.T) {
	mem, err := os.ReadFile(filepath.Join("cite", "testdata", "pages", "go_mem.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, memText, _ := strings.Cut(string(mem), "\n====\n")
	const memURL = "https://go.dev/ref/mem"
	web := &fakeWeb{pages: map[string]string{memURL: memText}}
	report := "# Goroutines\n\n" +
		"- A send on a channel is synchronized before the completion of the corresponding receive from that channel [1].\n" +
		"- Reading a variable written by another goroutine requires some synchronization to be safe [1].\n" +
		"- Goroutines that talk through channels need no extra locking for correctness [1].\n\n" +
		"## Sources\n[1] The Go Memory Model — " + memURL + "\n"
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		switch turns(req) {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("fetch", `{"url":"`+memURL+`"}`)}}, nil
		}
		return llm.Message{Content: report}, nil
	}}
	judge := &judgeModel{}
	pool := dbtest.NewPool(t)
	b := setupOn(t, pool, setupOpts{noWork: true})
	startAgent(t, jobs.Deps{Pool: pool, Model: model, Models: []llm.Model{judge}, Search: web, Fetch: web,
		Config: jobs.Config{VerifyModel: "verify"}})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID,
		Topic: "Do goroutines need locks?", Citations: jobs.CitationsFlag})
	if err != nil {
		t.Fatal(err)
	}
	run = waitEnded(t, pool, run.ID, 30*time.Second)
	want := cite.Counts{Claims: 3, Supported: 2, Unsupported: 1}
	if run.Status != jobs.StatusSucceeded || run.Citations == nil || *run.Citations != want || len(judge.calls) != 2 {
		t.Fatalf("%s (%s): citations %+v, %d judge calls; want %+v and 2 calls\n%s", run.Status, run.Error, run.Citations,
			len(judge.calls), want, run.Report)
	}
	got, err := jobs.CitationsOf(context.Background(), pool, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got.Citations {
		wantBy := "lexical"
		if c.Claim > 0 {
			wantBy = "verify"
		}
		if c.JudgedBy != wantBy {
			t.Errorf("claim %d judged by %q (%s), want %q", c.Claim, c.JudgedBy, c.Verdict, wantBy)
		}
	}
	// Two steps of 110 tokens, two judge calls of 51, in the ledger and on the run.
	var calls, judged int
	if err := pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE model = 'verify'
			AND status = 'settled' AND prompt_tokens = 50 AND completion_tokens = 1)
		FROM gb_model_calls WHERE run_id = $1`, run.ID).Scan(&calls, &judged); err != nil {
		t.Fatal(err)
	}
	if calls != 4 || judged != 2 || run.Tokens != 2*110+2*51 {
		t.Errorf("ledger: %d calls, %d settled judge calls; run tokens %d; want 4, 2 and %d", calls, judged, run.Tokens, 2*110+2*51)
	}
	t.Logf("judged: %+v\n%s", *run.Citations, run.Report)
}
