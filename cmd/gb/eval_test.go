package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/llm"
)

// TestEvalRegression runs five questions of the shipped set with the
// offline policy, under two configurations compared with --vs (the second
// with another prompt directory, which the offline policy does not read,
// and as forks of the first's researches at step 1, --vs-fork-step):
// it fails when a fact is missed, an answer is wrong (an answerable
// question declined, an unanswerable one answered), an expected source is
// not cited, or the citation check finds a claim unsupported or unread.
func TestEvalRegression(t *testing.T) {
	// Under CI=true it always runs, -short or not.
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("loads the documentation of the Go toolchain")
	}
	t.Setenv("DATABASE_URL", dbtest.NewURL(t))
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("GB_CITATIONS", "") // the offline policy's default: check and flag
	o := &evalOptions{set: filepath.Join("testdata", "eval_regression.yaml"), parallel: 3, timeout: 3 * time.Minute,
		vs: true, progress: &bytes.Buffer{}, log: filepath.Join(t.TempDir(), "eval.log")}
	o.b.Prompts = filepath.Join("testdata", "prompts-v2")
	forkStep := 1
	o.forkStep = &forkStep
	rep, set, err := runEval(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"A", "B"} {
		for i, r := range rep.Results[label] {
			q := &set.Questions[i]
			if r.Status != "succeeded" {
				t.Errorf("%s %s: %s %s", label, r.Question, r.Status, r.Error)
				continue
			}
			if len(r.Score.Missed) > 0 {
				t.Errorf("%s %s misses %q:\n%s", label, r.Question, r.Score.Missed, r.Report)
			}
			if v := answerVerdict(q, r); v != "answered" && v != "says n/c" {
				t.Errorf("%s %s: answer %s:\n%s", label, r.Question, v, r.Report)
			}
			if len(r.Score.Uncited) > 0 {
				t.Errorf("%s %s does not cite %q:\n%s", label, r.Question, r.Score.Uncited, r.Report)
			}
			if c := r.Citations; c == nil {
				t.Errorf("%s %s: the run has no citation check", label, r.Question)
			} else if c.Unsupported > 0 || c.Unread > 0 || (!q.Unanswerable && c.Supported == 0) {
				t.Errorf("%s %s: citations %+v", label, r.Question, *c)
			}
			if r.Agents < 1 || r.Steps < 1 || r.Tokens < 1 {
				t.Errorf("%s %s: usage %+v", label, r.Question, r)
			}
		}
	}
	checkForkedFree(t, rep.Results["A"], rep.Results["B"])
	if a := rep.Results["A"][3]; a.Agents != 4 {
		t.Errorf("the three-part question ran %d agents, want a root and three sub-agents", a.Agents)
	}
	if rep.Configs[1].Model != rep.Configs[0].Model {
		t.Errorf("B's model %q, want A's %q (only its prompts differ)", rep.Configs[1].Model, rep.Configs[0].Model)
	}
	var out bytes.Buffer
	if err := printEvalReport(&out, set, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FACTS A", "FACTS B", "TOTAL", "MEDIAN", "Differences: none in facts or answers.", "prompts testdata",
		"forks of A's researches at step 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}

func TestEvalSetsParseAndScore(t *testing.T) {
	t.Parallel()
	set, err := loadEvalSet("")
	if err != nil {
		t.Fatal(err)
	}
	unanswerable := 0
	for _, q := range set.Questions {
		if q.Unanswerable {
			unanswerable++
		}
	}
	if len(set.Questions) < 25 || unanswerable < 3 {
		t.Errorf("the shipped set has %d questions, %d unanswerable", len(set.Questions), unanswerable)
	}
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "set.jsonl")
	if err := os.WriteFile(jsonl, []byte(`{"question": "What does strings.Cut return?", "facts": ["found"], "sources": ["pkg\\.go\\.dev/strings$"]}`+"\n\n"+
		`{"id": "nc", "question": "How do I tune PostgreSQL?", "unanswerable": true}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	js, err := loadEvalSet(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	if js.Name != "set" || js.Questions[0].ID != "q1" || js.Questions[1].ID != "nc" {
		t.Fatalf("set %+v", js)
	}
	report := "# Report: What does strings.Cut return?\n\n- Cut slices s around the first instance of sep, returning found. [1]\n\n## Sources\n[1] package strings — https://pkg.go.dev/strings\n"
	if s := scoreReport(&js.Questions[0], report); len(s.Found) != 1 || len(s.Cited) != 1 || !s.Honest {
		t.Errorf("score %+v", s)
	}
	// The heading repeats the question: it is not an answer.
	if s := scoreReport(&js.Questions[0], "# Report: What does strings.Cut return?\n\nNothing here."); len(s.Found) != 0 {
		t.Errorf("the heading counted as a fact: %+v", s)
	}
	if s := scoreReport(&js.Questions[1], "The documents of this dataset do not cover this question."); !s.Honest {
		t.Errorf("an unanswerable question rightly declined: %+v", s)
	}
	if s := scoreReport(&js.Questions[1], "Set autovacuum_vacuum_scale_factor lower [1]."); s.Honest {
		t.Errorf("an unanswerable question answered counts as right: %+v", s)
	}
	for _, bad := range []string{"questions: []", "questions:\n  - question: q\n", "questions:\n  - question: q\n    facts: ['(']\n"} {
		p := filepath.Join(dir, "bad.yaml")
		_ = os.WriteFile(p, []byte(bad), 0o600)
		if _, err := loadEvalSet(p); err == nil {
			t.Errorf("set %q accepted", bad)
		}
	}
}

func TestPromptDirectoryReplacesPromptParts(t *testing.T) {
	t.Parallel()
	var got string
	inner := modelFunc(func(req llm.Request) { got = req.System })
	m, err := withPrompts(inner, filepath.Join("testdata", "prompts-v2"))
	if err != nil {
		t.Fatal(err)
	}
	sys := strings.TrimSpace(promptParts()["research.md"]) + "\n\n" + strings.TrimSpace(promptParts()["knowledge.md"])
	if _, err := m.Complete(context.Background(), llm.Request{System: sys}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "You are a research agent. Answer the question you were given in steps") ||
		!strings.HasSuffix(got, strings.TrimSpace(promptParts()["knowledge.md"])) {
		t.Fatalf("system prompt:\n%s", got)
	}
	if _, err := withPrompts(inner, t.TempDir()); err == nil {
		t.Error("an empty prompt directory accepted")
	}
}

// modelFunc is a model that records each request and answers "ok".
type modelFunc func(llm.Request)

func (f modelFunc) Name() string { return "func" }

func (f modelFunc) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	f(req)
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok"}}, nil
}

// checkForkedFree fails the test unless each of B's researches is a fork
// of A's at step 1 whose root's first step was replayed: recorded with no
// tokens and no call in the ledger. A single agent answers the same
// conversation the same way, so its fork also costs fewer tokens than A;
// a tree's sub-agents, run again, may take other turns.
func checkForkedFree(t *testing.T, as, bs []evalResult) {
	t.Helper()
	ctx := context.Background()
	pool, err := openDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for i, b := range bs {
		a := as[i]
		var replayed, tokens, calls int
		if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE replayed), coalesce(sum(prompt_tokens + completion_tokens), 0),
				(SELECT count(*) FROM gb_model_calls WHERE run_id = $1 AND step = 1)
			FROM gb_agent_research_steps WHERE run_id = $1 AND step = 1`, b.RunID).Scan(&replayed, &tokens, &calls); err != nil {
			t.Fatal(err)
		}
		if b.ForkedFrom != a.RunID || b.RunID == a.RunID || replayed != 1 || tokens != 0 || calls != 0 {
			t.Errorf("B %s: run %d forked from %d (A's is %d); its step 1: %d replayed, %d tokens, %d calls in the ledger",
				b.Question, b.RunID, b.ForkedFrom, a.RunID, replayed, tokens, calls)
		}
		if a.Agents == 1 && b.Agents == 1 && b.Tokens >= a.Tokens {
			t.Errorf("B %s: %d tokens to A's %d, though it replayed A's first step", b.Question, b.Tokens, a.Tokens)
		}
	}
}
