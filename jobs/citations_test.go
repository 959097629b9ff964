package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/cite"
	"github.com/gbresearch/gb/jobs/llm"
)

// hitRE reads a knowledge-base search result's header lines.
var hitRE = regexp.MustCompile(`(?m)^\[id (\d+)\] (.*) \((\S+)\)$`)

// citingModel searches the knowledge base, reads its first hit, then
// writes a report with four claims: one copied from what it read, one
// with a number the document does not have, one citing an invented URL
// and one citing the second hit, seen only as a search result. Asked to
// revise, it keeps the supported claim only; with failRevision it fails
// that call instead.
type citingModel struct {
	failRevision bool
	revisions    int
}

// reviseAsked reports whether a request carries the citation check's
// revision note.
func reviseAsked(req llm.Request) bool {
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "The citation check of your report") {
			return true
		}
	}
	return false
}

func (m *citingModel) script() *scriptModel {
	return &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		var search, read string
		for _, msg := range req.Messages {
			switch {
			case msg.Role == llm.RoleTool && msg.Name == "search":
				search = msg.Content
			case msg.Role == llm.RoleTool && msg.Name == "read":
				read = msg.Content
			}
		}
		hits := hitRE.FindAllStringSubmatch(search, -1)
		switch {
		case search == "":
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", `{"query":"goroutine","limit":5}`)}}, nil
		case len(hits) < 2:
			return llm.Message{Content: "no hits: " + search}, nil
		case read == "":
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("read", `{"id":`+hits[0][1]+`}`)}}, nil
		}
		fact := quotable(read)
		if reviseAsked(req) {
			m.revisions++
			if m.failRevision {
				return llm.Message{}, fmt.Errorf("the provider refused: %w", llm.ErrPermanent)
			}
			return llm.Message{Content: fmt.Sprintf("# Report\n\n- %s [1]\n\n## Sources\n[1] %s — %s\n",
				fact, hits[0][2], hits[0][3])}, nil
		}
		return llm.Message{Content: fmt.Sprintf("# Report\n\n- %s [1]\n- The package was first released in 2031 [1].\n"+
			"- Mutexes are fair by default [2].\n- %s is documented online [3].\n\n## Sources\n[1] %s — %s\n"+
			"[2] Invented — https://example.invalid/made-up\n[3] %s — %s\n",
			fact, hits[1][2], hits[0][2], hits[0][3], hits[1][2], hits[1][3])}, nil
	}}
}

// quotable is a one-sentence line of a read document, to quote.
func quotable(read string) string {
	for _, line := range strings.Split(read, "\n") {
		line = strings.TrimSpace(line)
		if len(strings.Fields(line)) >= 8 && strings.HasSuffix(line, ".") && !strings.Contains(line[:len(line)-1], ". ") &&
			!strings.ContainsAny(line, "[]`") {
			return line
		}
	}
	return "no sentence"
}

// runCiting runs a research of citingModel with a citations mode and
// returns it ended.
func runCiting(t *testing.T, mode string, maxSteps int, model *citingModel) (*testBundle, *jobs.Run) {
	t.Helper()
	b := setup(t, setupOpts{model: model.script()})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID,
		Topic: "How does sync.Mutex work?", MaxSteps: maxSteps, Citations: mode})
	if err != nil {
		t.Fatal(err)
	}
	return b, waitEnded(t, b.pool, run.ID, 30*time.Second)
}

// The fake model's report has a supported claim, a wrong number, an
// invented URL and a citation of a search result it never read: flag
// marks the last three in the stored report and counts them.
func TestCitationsFlag(t *testing.T) {
	b, run := runCiting(t, jobs.CitationsFlag, 10, &citingModel{})
	if run.Status != jobs.StatusSucceeded || run.Steps != 3 {
		t.Fatalf("run ended %s after %d steps (%s), want succeeded after 3; report:\n%s", run.Status, run.Steps, run.Error, run.Report)
	}
	want := cite.Counts{Claims: 4, Supported: 1, Unsupported: 1, Unread: 2}
	if run.Citations == nil || *run.Citations != want || run.CitationsBefore != nil {
		t.Fatalf("citations %+v before %+v, want %+v and none before", run.Citations, run.CitationsBefore, want)
	}
	t.Logf("flag: citations %+v; the stored report:\n%s", *run.Citations, run.Report)
	if n := strings.Count(run.Report, "⚠ unsupported"); n != 1 || !strings.Contains(run.Report, "2031 [1]. ⚠ unsupported") {
		t.Errorf("report does not flag the wrong number once:\n%s", run.Report)
	}
	if n := strings.Count(run.Report, "⚠ unread"); n != 2 {
		t.Errorf("report flags %d claims unread, want 2:\n%s", n, run.Report)
	}
	got, err := jobs.CitationsOf(context.Background(), b.pool, run)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]cite.Verdict{}
	for _, c := range got.Citations {
		verdicts[fmt.Sprintf("%d/%d", c.Claim, c.Marker)] = c.Verdict
		if c.Verdict == cite.Supported && c.Passage == "" {
			t.Errorf("supported claim %d has no passage", c.Claim)
		}
	}
	wantV := map[string]cite.Verdict{"0/1": cite.Supported, "1/1": cite.Unsupported, "2/2": cite.Unread, "3/3": cite.Unread}
	if fmt.Sprint(verdicts) != fmt.Sprint(wantV) || got.Round != 0 || got.Mode != jobs.CitationsFlag {
		t.Errorf("verdicts %v round %d mode %s, want %v round 0 mode flag", verdicts, got.Round, got.Mode, wantV)
	}
}

// With revise, the root gets one more step (a step job like any other,
// counted) with the claims that lack support; the fake model keeps only
// the supported one, and the run keeps the counts before and after.
func TestCitationsRevise(t *testing.T) {
	model := &citingModel{}
	b, run := runCiting(t, jobs.CitationsRevise, 10, model)
	if run.Status != jobs.StatusSucceeded || run.Steps != 4 || model.revisions != 1 {
		t.Fatalf("run ended %s after %d steps and %d revisions (%s), want succeeded after 4 and 1",
			run.Status, run.Steps, model.revisions, run.Error)
	}
	before := cite.Counts{Claims: 4, Supported: 1, Unsupported: 1, Unread: 2}
	after := cite.Counts{Claims: 1, Supported: 1}
	if run.CitationsBefore == nil || *run.CitationsBefore != before || run.Citations == nil || *run.Citations != after {
		t.Fatalf("citations before %+v after %+v, want %+v and %+v", run.CitationsBefore, run.Citations, before, after)
	}
	t.Logf("revise: citations before %+v, after %+v; the revised report:\n%s", *run.CitationsBefore, *run.Citations, run.Report)
	if strings.Contains(run.Report, "⚠") || strings.Contains(run.Report, "2031") {
		t.Errorf("revised report still has the flagged claims:\n%s", run.Report)
	}
	var note string
	if err := b.pool.QueryRow(context.Background(), `SELECT m->>'content' FROM gb_agent_research_steps s,
			jsonb_array_elements(s.messages) m WHERE s.run_id = $1 AND s.step = 3 AND m->>'role' = 'user'`, run.ID).
		Scan(&note); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2031", "example.invalid", "(unsupported)", "(unread)", "never read", "soften",
		"Do not add quotations", "This is your last step"} {
		if !strings.Contains(note, want) {
			t.Errorf("the revision note does not name %q:\n%s", want, note)
		}
	}
	// The worst first: the unsupported claim before the unread ones; one last-step note.
	if strings.Index(note, "(unsupported)") > strings.Index(note, "(unread)") || strings.Count(note, "last step") != 1 ||
		strings.Contains(note, "Sources list could not be read") {
		t.Errorf("revision note:\n%s", note)
	}
	var notes int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM gb_agent_research_steps s,
			jsonb_array_elements(s.messages) m WHERE s.run_id = $1 AND m->>'content' LIKE '%last step%'`, run.ID).
		Scan(&notes); err != nil || notes != 1 {
		t.Errorf("%d stored last-step notes (%v), want the revision note alone", notes, err)
	}
	got, err := jobs.CitationsOf(context.Background(), b.pool, run)
	if err != nil {
		t.Fatal(err)
	}
	if got.Round != 1 || len(got.Citations) != 1 || got.Citations[0].Verdict != cite.Supported {
		t.Errorf("citations of the revised report: round %d, %+v; want round 1 with one supported", got.Round, got.Citations)
	}
}

// A report written on the run's last step has no step left for a
// revision: it is flagged instead.
func TestCitationsReviseNoStepLeft(t *testing.T) {
	model := &citingModel{}
	b, run := runCiting(t, jobs.CitationsRevise, 3, model)
	if run.Status != jobs.StatusSucceeded || run.Steps != 3 || model.revisions != 0 {
		t.Fatalf("run ended %s after %d steps and %d revisions, want succeeded after 3 and none", run.Status, run.Steps, model.revisions)
	}
	if run.Citations == nil || run.Citations.Unread != 2 || strings.Count(run.Report, "⚠") != 3 {
		t.Errorf("citations %+v, report:\n%s\nwant 3 flagged claims", run.Citations, run.Report)
	}
	requireSkipped(t, b, run, "no steps left (3 of 3 used)")
}

// requireSkipped checks that a run's citations say why its revision was
// skipped.
func requireSkipped(t *testing.T, b *testBundle, run *jobs.Run, why string) {
	t.Helper()
	got, err := jobs.CitationsOf(context.Background(), b.pool, run)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.RevisionSkipped, why) {
		t.Errorf("revision_skipped %q, want it to say %q", got.RevisionSkipped, why)
	}
}

// A revision whose model call fails for good ends the research with the
// report it wrote before, flagged: never without a report.
func TestCitationsRevisionFails(t *testing.T) {
	model := &citingModel{failRevision: true}
	b, run := runCiting(t, jobs.CitationsRevise, 10, model)
	if run.Status != jobs.StatusSucceeded || model.revisions == 0 {
		t.Fatalf("run ended %s (%s) after %d revision calls, want succeeded with its draft", run.Status, run.Error, model.revisions)
	}
	if strings.Count(run.Report, "⚠") != 3 || !strings.Contains(run.Report, "2031") {
		t.Errorf("report is not the flagged draft:\n%s", run.Report)
	}
	if run.CitationsBefore == nil || run.Citations == nil || *run.Citations != *run.CitationsBefore {
		t.Errorf("citations %+v before %+v, want the draft's counts in both", run.Citations, run.CitationsBefore)
	}
	requireSkipped(t, b, run, "the revision could not be made: model error: the provider refused")
}

// A research asks for off, flag or revise, or for nothing (the default).
func TestCitationsModeValidated(t *testing.T) {
	p := jobs.StartParams{Topic: "x", Citations: "always"}
	var fe *jobs.FieldError
	if err := p.Validate(); !errors.As(err, &fe) || fe.Field != "citations" || !strings.Contains(fe.Msg, "off, flag or revise") {
		t.Fatalf("Validate = %v, want a citations field error", err)
	}
}

// The offline policy's extractive reports cite only what it read: on the
// demo dataset every cited claim comes out supported.
func TestCitationsOfflineSupported(t *testing.T) {
	b := setup(t, setupOpts{})
	ctx := context.Background()
	for _, topic := range []string{"How do I cancel a context with a deadline?",
		"How does sync.WaitGroup wait for goroutines, and how does a bufio.Scanner split lines?"} {
		run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID, Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		run = waitEnded(t, b.pool, run.ID, 60*time.Second)
		if run.Status != jobs.StatusSucceeded || run.CitationsMode != jobs.CitationsFlag || run.Citations == nil {
			t.Fatalf("%q: %s (%s), mode %q, citations %+v", topic, run.Status, run.Error, run.CitationsMode, run.Citations)
		}
		c := run.Citations
		if c.Claims == 0 || c.Supported+c.Uncited != c.Claims || c.Supported == 0 || strings.Contains(run.Report, "⚠") {
			got, _ := jobs.CitationsOf(ctx, b.pool, run)
			t.Errorf("%q: citations %+v, want every cited claim supported; verdicts %+v\nreport:\n%s", topic, c, got, run.Report)
		}
	}
}

// A revision the tree's budget cannot pay for does not run: the research
// ends with its draft, flagged, and says why, in an event and in its
// citations (revision_skipped). The budget that pays for the steps up to
// the report and not for the revision depends on the prompts' length, so
// the test looks for it: budgets a step apart from one too small for the
// draft, until one ends with the draft kept. One that pays for the
// revision first fails the test: no budget lies between the two.
func TestCitationsReviseOutOfBudget(t *testing.T) {
	const from, step, to = 4500, 150, 9000
	for budget := from; budget <= to; budget += step {
		model := &citingModel{}
		b := setup(t, setupOpts{model: model.script(), config: jobs.Config{JudgeOff: true}})
		ctx := context.Background()
		run, _, err := b.agent.StartResearch(ctx, jobs.StartParams{UserID: b.userID,
			Topic: "How does sync.Mutex work?", MaxSteps: 10, Citations: jobs.CitationsRevise, MaxTokens: int64(budget)})
		if err != nil && strings.Contains(err.Error(), "too small for the research to write a report") {
			continue // refused at the start
		}
		if err != nil {
			t.Fatal(err)
		}
		run = waitEnded(t, b.pool, run.ID, 30*time.Second)
		if run.Status == jobs.StatusFailed && strings.Contains(run.Error, "no budget was left for the report") {
			continue // too small for the draft itself
		}
		if run.Status != jobs.StatusSucceeded || run.Citations == nil || model.revisions != 0 {
			t.Fatalf("budget %d: %s (%s), %d revisions, citations %+v; want the draft kept, its revision skipped",
				budget, run.Status, run.Error, model.revisions, run.Citations)
		}
		got, err := jobs.CitationsOf(ctx, b.pool, run)
		if err != nil {
			t.Fatal(err)
		}
		var events int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM gb_agent_research_events WHERE run_id = $1 AND kind = $2`,
			run.ID, jobs.EventRevisionSkipped).Scan(&events); err != nil {
			t.Fatal(err)
		}
		if run.Steps != 3 || strings.Count(run.Report, "⚠") != 3 || run.CitationsBefore != nil || events != 1 ||
			!strings.Contains(got.RevisionSkipped, "does not fit what is left of the budget") {
			t.Fatalf("budget %d: %d steps, %d flags, %d revision_skipped events, citations say %q; report:\n%s",
				budget, run.Steps, strings.Count(run.Report, "⚠"), events, got.RevisionSkipped, run.Report)
		}
		t.Logf("budget %d: the draft is kept, flagged; citations %+v; revision skipped: %s", budget, *run.Citations, got.RevisionSkipped)
		return
	}
	t.Fatalf("no budget from %d to %d tokens paid for the draft", from, to)
}

// A research on the web: the fake model fetches one page, sees another
// only as a search result, and writes a report with a claim its page
// supports, a wrong number, a claim cited to the page it only saw and one
// cited to an invented URL. flag marks the last three; revise removes them
// in one more step. The page is the Go memory model's text as the service
// extracts it (cite/testdata/pages).
func TestCitationsOnTheWeb(t *testing.T) {
	mem, err := os.ReadFile(filepath.Join("cite", "testdata", "pages", "go_mem.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, memText, _ := strings.Cut(string(mem), "\n====\n")
	const memURL, asmURL = "https://go.dev/ref/mem", "https://go.dev/doc/asm"
	web := &fakeWeb{pages: map[string]string{memURL: memText, asmURL: "The assembler is based on the Plan 9 assemblers."}}
	report := "# Channels\n\n" +
		"A send on a channel is synchronized before the completion of the corresponding receive from that channel [1]. " +
		"Go's memory model follows the approach of Boehm and Adve, published in PLDI 2010 [1].\n\n" +
		"- The assembler is based on the input style of the Plan 9 assemblers [2].\n" +
		"- Goroutines start with a 2 KB stack [3].\n\n" +
		"## Sources\n[1] The Go Memory Model — " + memURL + "\n[2] Assembler — " + asmURL + "\n" +
		"[3] Stacks — https://go.dev/blog/stacks-2031\n"
	for _, mode := range []string{jobs.CitationsFlag, jobs.CitationsRevise} {
		t.Run(mode, func(t *testing.T) {
			model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
				switch {
				case reviseAsked(req):
					return llm.Message{Content: "# Channels\n\nA send on a channel is synchronized before the completion of " +
						"the corresponding receive from that channel [1].\n\n## Sources\n[1] The Go Memory Model — " + memURL + "\n"}, nil
				case turns(req) == 0:
					return llm.Message{ToolCalls: []llm.ToolCall{toolCall("web_search", `{"query":"go memory model","max_results":5}`)}}, nil
				case turns(req) == 1:
					return llm.Message{ToolCalls: []llm.ToolCall{toolCall("fetch", `{"url":"`+memURL+`"}`)}}, nil
				}
				return llm.Message{Content: report}, nil
			}}
			pool := dbtest.NewPool(t)
			b := setupOn(t, pool, setupOpts{noWork: true})
			startAgent(t, jobs.Deps{Pool: pool, Model: model, Search: web, Fetch: web})
			run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID,
				Topic: "How do channels synchronize?", Citations: mode})
			if err != nil {
				t.Fatal(err)
			}
			run = waitEnded(t, pool, run.ID, 30*time.Second)
			first := cite.Counts{Claims: 4, Supported: 1, Unsupported: 1, Unread: 2}
			if run.Status != jobs.StatusSucceeded {
				t.Fatalf("run ended %s: %s", run.Status, run.Error)
			}
			if mode == jobs.CitationsFlag {
				if run.Citations == nil || *run.Citations != first || strings.Count(run.Report, "⚠") != 3 {
					t.Fatalf("citations %+v, report:\n%s", run.Citations, run.Report)
				}
				got, err := jobs.CitationsOf(context.Background(), pool, run)
				if err != nil {
					t.Fatal(err)
				}
				reasons := map[int]string{}
				for _, c := range got.Citations {
					reasons[c.Marker] += c.Reason + ";"
				}
				if !strings.Contains(reasons[1], `number "2010"`) || !strings.Contains(reasons[2], "search result") ||
					!strings.Contains(reasons[3], "never read") {
					t.Errorf("reasons %v", reasons)
				}
				t.Logf("flag: %+v\n%s", *run.Citations, run.Report)
				return
			}
			after := cite.Counts{Claims: 1, Supported: 1}
			if run.CitationsBefore == nil || *run.CitationsBefore != first || run.Citations == nil || *run.Citations != after ||
				run.Steps != 4 || strings.Contains(run.Report, "⚠") {
				t.Fatalf("%d steps, citations before %+v after %+v, report:\n%s", run.Steps, run.CitationsBefore, run.Citations, run.Report)
			}
			t.Logf("revise: before %+v, after %+v\n%s", *run.CitationsBefore, *run.Citations, run.Report)
		})
	}
}
