package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// judgeClaimRE reads the claims of a judge's request.
var judgeClaimRE = regexp.MustCompile(`(?m)^Claim (\d+): (.*)$`)

// judgeModel is a verification model that answers the judge's JSON by the
// words of each claim it is asked about (rules: a word to a verdict; no
// rule, supported), or with answer when set; it keeps its requests.
type judgeModel struct {
	rules  map[string]string
	answer string
	mu     sync.Mutex
	reqs   []llm.Request
}

func (m *judgeModel) Name() string { return "verify" }

func (m *judgeModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: m.judge(req)},
		Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 20}}, nil
}

// judge answers one request: fenced JSON, as models often write it.
func (m *judgeModel) judge(req llm.Request) string {
	if m.answer != "" {
		return m.answer
	}
	type verdict struct {
		ID      int    `json:"id"`
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
	}
	var out struct {
		Verdicts []verdict `json:"verdicts"`
	}
	for _, c := range judgeClaimRE.FindAllStringSubmatch(req.Messages[0].Content, -1) {
		v := verdict{Verdict: "supported", Reason: "the passage says so"}
		for word, to := range m.rules {
			if strings.Contains(c[2], word) {
				v.Verdict, v.Reason = to, "the passage says otherwise"
			}
		}
		fmt.Sscan(c[1], &v.ID)
		out.Verdicts = append(out.Verdicts, v)
	}
	b, _ := json.Marshal(out)
	return "```json\n" + string(b) + "\n```"
}

// judgeResearch runs a research whose model fetches the Go memory model
// and writes report, with the judge and config given; it returns the
// ended run.
func judgeResearch(t *testing.T, judge llm.Model, cfg jobs.Config, report string, maxTokens int64) (*jobs.Run, *jobs.RunCitations, *pgxpool.Pool) {
	t.Helper()
	mem, err := os.ReadFile(filepath.Join("cite", "testdata", "pages", "go_mem.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, memText, _ := strings.Cut(string(mem), "\n====\n")
	web := &fakeWeb{pages: map[string]string{memURL: memText}}
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		if req.System == prompts.Judge {
			return llm.Message{Content: `{"verdicts": [{"id": 1, "verdict": "unsupported", "reason": "own model"}]}`}, nil
		}
		if turns(req) == 0 {
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("fetch", `{"url":"`+memURL+`"}`)}}, nil
		}
		return llm.Message{Content: report}, nil
	}}
	pool := dbtest.NewPool(t)
	b := setupOn(t, pool, setupOpts{noWork: true})
	d := jobs.Deps{Pool: pool, Model: model, Search: web, Fetch: web, Config: cfg}
	if judge != nil {
		d.Models = []llm.Model{judge}
	}
	startAgent(t, d)
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID,
		Topic: "Do goroutines need locks?", Citations: jobs.CitationsFlag, MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	run = waitEnded(t, pool, run.ID, 30*time.Second)
	if run.Status != jobs.StatusSucceeded || run.Citations == nil {
		t.Fatalf("%s (%s): citations %+v", run.Status, run.Error, run.Citations)
	}
	got, err := jobs.CitationsOf(context.Background(), pool, run)
	if err != nil {
		t.Fatal(err)
	}
	return run, got, pool
}

const memURL = "https://go.dev/ref/mem"

// judgeReport has three claims citing the memory model: one it says, one
// it says in part, and one the opposite of what it says.
var judgeReport = "# Goroutines\n\n" +
	"- A send on a channel is synchronized before the completion of the corresponding receive from that channel [1].\n" +
	"- Reading a variable written by another goroutine requires some synchronization to be safe [1].\n" +
	"- Goroutines that share variables need no synchronization at all [1].\n\n" +
	"## Sources\n[1] The Go Memory Model — " + memURL + "\n"

// claimVerdicts are the claim verdicts and judges of a check, by claim.
func claimVerdicts(rc *jobs.RunCitations) map[int]string {
	out := map[int]string{}
	for _, c := range rc.Citations {
		out[c.Claim] = string(c.ClaimVerdict) + " by " + c.JudgedBy
	}
	return out
}

// With a verification model, every cited claim of a report is judged in
// one batched call, each with its passages inside an untrusted block: the
// judge's verdict stands over the lexical one, contradicted is told apart
// from unsupported, and the call is in the ledger and on the run's usage.
func TestCitationsJudge(t *testing.T) {
	judge := &judgeModel{rules: map[string]string{"requires some": "partly", "need no synchronization": "contradicted"}}
	run, got, pool := judgeResearch(t, judge, jobs.Config{VerifyModel: "verify"}, judgeReport, 0)
	if len(judge.reqs) != 1 {
		t.Fatalf("%d judge calls, want one for the three claims", len(judge.reqs))
	}
	req := judge.reqs[0]
	q := req.Messages[0].Content
	if req.System != prompts.Judge || len(judgeClaimRE.FindAllString(q, -1)) != 3 || strings.Count(q, "<<<UNTRUSTED") != 3 ||
		req.MaxCompletionTokens < 3*40 || strings.Contains(q, "[1].") {
		t.Errorf("judge request (cap %d):\n%s", req.MaxCompletionTokens, q)
	}
	want := map[int]string{0: "supported by verify", 1: "weak by verify", 2: "contradicted by verify"}
	if v := claimVerdicts(got); fmt.Sprint(v) != fmt.Sprint(want) {
		t.Errorf("verdicts %v, want %v", v, want)
	}
	for _, c := range got.Citations {
		if c.Claim == 2 && !strings.Contains(c.Reason, "judged contradicted by verify: the passage says otherwise") {
			t.Errorf("contradicted claim's reason %q", c.Reason)
		}
	}
	if run.Citations.Supported != 1 || run.Citations.Weak != 1 || run.Citations.Unsupported != 0 {
		t.Errorf("counts %+v: the contradicted claim is not counted unsupported", *run.Citations)
	}
	// Two steps of 110 tokens, one judge call of 70, in the ledger and on the run.
	var calls, judged int
	if err := pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE model = 'verify'
			AND status = 'settled' AND prompt_tokens = 50 AND completion_tokens = 20)
		FROM gb_model_calls WHERE run_id = $1`, run.ID).Scan(&calls, &judged); err != nil {
		t.Fatal(err)
	}
	if calls != 3 || judged != 1 || run.Tokens != 2*110+70 {
		t.Errorf("ledger: %d calls, %d settled judge calls; run tokens %d; want 3, 1 and %d", calls, judged, run.Tokens, 2*110+70)
	}
	t.Logf("judged: %+v\n%s", *run.Citations, run.Report)
}

// With no verification model, the run's own model judges; with the judge
// off, none does and the lexical verdicts stand.
func TestCitationsJudgeDefaultAndOff(t *testing.T) {
	_, got, _ := judgeResearch(t, nil, jobs.Config{}, judgeReport, 0)
	if v := claimVerdicts(got); v[0] != "unsupported by script" {
		t.Errorf("own model as judge: verdicts %v, want claim 0 unsupported by script", v)
	}
	_, got, _ = judgeResearch(t, nil, jobs.Config{JudgeOff: true}, judgeReport, 0)
	for _, c := range got.Citations {
		if c.JudgedBy != "lexical" {
			t.Errorf("judge off: claim %d judged by %s", c.Claim, c.JudgedBy)
		}
	}
}

// A malformed answer is rejected whole: the claims keep their lexical
// verdicts, and the call, answered and paid, is still in the ledger.
func TestCitationsJudgeMalformed(t *testing.T) {
	// The forms of malformed answers are in TestParseJudgeAnswer.
	for _, answer := range []string{`{"verdicts": [{"id": 1, "verdict": "true"}]}`} {
		judge := &judgeModel{answer: answer}
		run, got, pool := judgeResearch(t, judge, jobs.Config{VerifyModel: "verify"}, judgeReport, 0)
		for _, c := range got.Citations {
			if c.JudgedBy != "lexical" {
				t.Errorf("%q: claim %d judged by %s", answer, c.Claim, c.JudgedBy)
			}
		}
		var judged int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM gb_model_calls
			WHERE run_id = $1 AND model = 'verify' AND status = 'settled'`, run.ID).Scan(&judged); err != nil {
			t.Fatal(err)
		}
		if len(judge.reqs) != 1 || judged != 1 {
			t.Errorf("%q: %d judge calls, %d in the ledger; want 1 and 1", answer, len(judge.reqs), judged)
		}
	}
}

// A judge's call the tree's budget does not admit is not made: the claims
// keep their lexical verdicts and the research still ends with its report.
// The budget is measured: a first research shows what its two steps
// reserve, and the second gets that and a few tokens more.
func TestCitationsJudgeOverBudget(t *testing.T) {
	run, _, pool := judgeResearch(t, &judgeModel{}, jobs.Config{VerifyModel: "verify"}, judgeReport, 1_000_000)
	var first, second int64
	if err := pool.QueryRow(context.Background(), `SELECT min(prompt_tokens + completion_tokens) FILTER (WHERE step = 1),
			max(reserved_tokens) FILTER (WHERE step = 2 AND model = 'script')
		FROM gb_model_calls WHERE run_id = $1`, run.ID).Scan(&first, &second); err != nil {
		t.Fatal(err)
	}
	// The second step reserves what is left of the share before the
	// report's (3/4 of the budget), and the judge finds nothing left.
	budget := (first+second)*4/3 + 8
	judge := &judgeModel{}
	run, got, _ := judgeResearch(t, judge, jobs.Config{VerifyModel: "verify"}, judgeReport, budget)
	if len(judge.reqs) != 0 {
		t.Errorf("budget %d: %d judge calls, want none admitted", budget, len(judge.reqs))
	}
	for _, c := range got.Citations {
		if c.JudgedBy != "lexical" {
			t.Errorf("claim %d judged by %s", c.Claim, c.JudgedBy)
		}
	}
	if !strings.Contains(run.Report, "Sources") {
		t.Errorf("report:\n%s", run.Report)
	}
}
