package dashboard_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// xssReport is a report as a hostile page could make a model write it:
// every piece of markup in it must show as text.
const xssReport = "# Report with markup\n\n" +
	"<script>window.__xss = 'script'</script>\n\n" +
	"An image: <img src=x onerror=\"window.__xss = 'img'\"> and a [link](javascript:window.__xss='link') " +
	"and <a href=\"javascript:window.__xss='a'\">raw</a>.\n\n" +
	"- **bold** item with <b onmouseover=\"window.__xss='b'\">tags</b>\n" +
	"- see https://pkg.go.dev/context\n"

// TestDashboardInBrowser serves the dashboard on a real stack and runs
// e2e/run.mjs, which drives Chromium through playwright-core: it signs in,
// starts the demo research, watches the tree grow and finish while pressing
// its Cancel button (which must stay the same element and ask each time),
// opens a sub-agent, reads the report, checks the events' numbers in their
// tree, dates in the browser's locale, a list of runs without reports,
// the Markdown renderer, that a report and topic full of markup show as
// text, that a run's cached and reasoning tokens and its sources' statuses
// and sizes show, that a count of one is written in the singular, that at
// 1280 and 400 px each fact's label stands above its value and the tree
// table scrolls in its box (screenshots facts-1280.png, facts-400.png and
// tree-400.png), and that a timed-out run is ended for the page: no
// Cancel, no long poll, and a runs list not read again on a timer.
// Screenshots go to .data/screenshots/ at the top of the repository. Without node, Chromium or playwright-core the test skips;
// under CI=true it fails. GB_E2E_IGNORE_WAIT=true hides the wait parameter
// of the events route from the server, to check that the page still follows
// a tree when the server answers its long polls at once.
func TestDashboardInBrowser(t *testing.T) {
	node := browserTools(t)
	s := startStack(t, 150*time.Millisecond, os.Getenv("GB_E2E_IGNORE_WAIT") == "true")
	ctx := context.Background()

	// A finished run whose topic and report hold markup.
	xss, _, err := s.agent.StartResearch(ctx, jobs.StartParams{UserID: s.userID, MaxSteps: 3,
		Topic: `What does <img src=x onerror="window.__xss='topic'"> do to a page?`})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, s.pool, xss.ID, 30*time.Second)
	if _, err := s.pool.Exec(ctx, "UPDATE gb_agent_research_runs SET report = $1 WHERE id = $2", xssReport, xss.ID); err != nil {
		t.Fatal(err)
	}
	// The offline model uses no prompt cache and no reasoning: the run is
	// given the usage run.mjs looks for, 1234 cached and 567 reasoning
	// tokens, and one call settled at its estimate.
	if _, err := s.pool.Exec(ctx, `UPDATE gb_agent_research_runs SET cached_tokens = 1234, reasoning_tokens = 567
		WHERE id = $1`, xss.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO gb_model_calls (job_id, attempt, step, run_id, root_id, status, estimated)
		VALUES (0, 1, 1, $1, $1, 'settled', true)`, xss.ID); err != nil {
		t.Fatal(err)
	}
	// Its sources, as run.mjs expects them: a page fetched, the same page
	// from the tree's cache, a page answered 404, and a search result.
	if _, err := s.pool.Exec(ctx, `INSERT INTO gb_sources (root_id, run_id, step, kind, url, requested_url, title, status, bytes, content_type, error, cached)
		VALUES ($1, $1, 1, 'fetch', 'https://go.dev/doc/effective_go', 'https://go.dev/doc/effective_go', 'Effective Go', 200, 51234, 'text/html', '', false),
		       ($1, $1, 2, 'fetch', 'https://go.dev/doc/effective_go', 'https://go.dev/doc/effective_go', 'Effective Go', 200, 51234, 'text/html', '', true),
		       ($1, $1, 2, 'fetch', 'https://go.dev/missing', 'https://go.dev/missing', '', 404, 1256, 'text/html', 'HTTP 404 Not Found', false),
		       ($1, $1, 3, 'result', 'https://pkg.go.dev/context', '', 'context package', 0, 0, '', '', false)`, xss.ID); err != nil {
		t.Fatal(err)
	}
	// A run that timed out before it wrote a report.
	late, _, err := s.agent.StartResearch(ctx, jobs.StartParams{UserID: s.userID, MaxSteps: 3, Topic: "What does a deadline do?"})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, s.pool, late.ID, 30*time.Second)
	if _, err := s.pool.Exec(ctx, `UPDATE gb_agent_research_runs SET status = $2, state = $3, report = '',
		error = 'ran past its wall-clock cap' WHERE id = $1`, late.ID, jobs.StatusTimedOut, jobs.StateTimedOut); err != nil {
		t.Fatal(err)
	}

	// The research run.mjs starts takes no step before the page has seen
	// its root alone: the script releases the model once it has.
	s.gate.arm()
	var started int64
	for _, line := range runScript(t, node, s, screenshotDir(t, ""), "run.mjs", nil, strconv.FormatInt(xss.ID, 10), strconv.FormatInt(late.ID, 10)) {
		if v, ok := strings.CutPrefix(line, "started run "); ok {
			started, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}

	// What the browser saw is what the database holds: the research it
	// started is a succeeded root with its three sub-agents.
	if started == 0 {
		t.Fatal("run.mjs did not say which run it started")
	}
	tree, err := jobs.Tree(ctx, s.pool, started)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != 4 || tree[0].ID != started || tree[0].Status != jobs.StatusSucceeded {
		t.Fatalf("run %d: tree of %d runs, root %s; want a succeeded root and 3 sub-agents", started, len(tree), tree[0].Status)
	}
	// The run's page followed the tree by its event stream, the runs list
	// by long polls, not by a request per tick.
	t.Logf("%d requests for events, %d of them long polls; %d event streams", s.eventPolls.Load(), s.longPolls.Load(), s.streams.Load())
	if s.streams.Load() == 0 {
		t.Error("the dashboard never opened an event stream")
	}
	if n := s.longPollsFor(late.ID); n != 0 {
		t.Errorf("the dashboard long-polled the events of timed-out run %d %d times, want none", late.ID, n)
	}
}

// TestDashboardAnswersAQuestionInBrowser runs e2e/run.mjs with E2E_ASK=1:
// in Chromium it starts an interactive research from the form, sees the
// question its root asks on the run's page and on the timeline (listed
// under the drawing, then with its answer once answered), sees the
// runs list follow the waiting run by a long poll on its tree rather than
// by reading the list again, and answers it in the page's answer box. The research it started must have asked
// once, been answered once by its owner, and written its report from the
// answer. The stack answers the event stream 501, as the HTTP API of the
// Lambda deployment does: the page must follow the run by the long poll.
func TestDashboardAnswersAQuestionInBrowser(t *testing.T) {
	node := browserTools(t)
	s := startStack(t, 0, false)
	s.noStream.Store(true)
	var id int64
	for _, line := range runScript(t, node, s, screenshotDir(t, ""), "run.mjs", []string{"E2E_ASK=1"}) {
		if v, ok := strings.CutPrefix(line, "asked run "); ok {
			id, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if id == 0 {
		t.Fatal("run.mjs did not say which research asked")
	}
	run, err := jobs.GetRun(context.Background(), s.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Interactive || run.Status != jobs.StatusSucceeded || !strings.Contains(run.Report, "Go 1.26, and nothing older") {
		t.Errorf("run %d: interactive %t, %s, report %q", id, run.Interactive, run.Status, run.Report)
	}
	var asked, byOwner int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE kind = $2),
			count(*) FILTER (WHERE kind = $3 AND data->>'by' = 'owner')
		FROM gb_agent_research_events WHERE run_id = $1`, id, jobs.EventInputRequired, jobs.EventAnswered).
		Scan(&asked, &byOwner); err != nil {
		t.Fatal(err)
	}
	if asked != 1 || byOwner != 1 {
		t.Errorf("run %d asked %d times and was answered by its owner %d times, want 1 and 1", id, asked, byOwner)
	}
	if s.streams.Load() == 0 || s.longPollsFor(id) == 0 {
		t.Errorf("%d event streams refused, %d long polls of run %d: want the page to try the stream, then long-poll",
			s.streams.Load(), s.longPollsFor(id), id)
	}
}

// TestDashboardApprovesAPlanInBrowser runs e2e/run.mjs with E2E_PLAN=1: in
// Chromium it starts a research that must have its plan approved, sees the
// sub-agent its root proposes on the run's page and on the timeline, and
// approves it with the page's approve button and a note. The research must
// have proposed once, been decided once by its owner, and written its
// report from the approval.
func TestDashboardApprovesAPlanInBrowser(t *testing.T) {
	node := browserTools(t)
	s := startStack(t, 0, false)
	var id int64
	for _, line := range runScript(t, node, s, screenshotDir(t, ""), "run.mjs", []string{"E2E_PLAN=1"}) {
		if v, ok := strings.CutPrefix(line, "planned run "); ok {
			id, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if id == 0 {
		t.Fatal("run.mjs did not say which research proposed a plan")
	}
	run, err := jobs.GetRun(context.Background(), s.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if !run.ApprovePlan || run.Status != jobs.StatusSucceeded || run.Plan == nil || run.Plan.State != jobs.PlanApproved ||
		run.Plan.Note != "keep it short" || !strings.Contains(run.Report, "- "+plannedName+" (") {
		t.Errorf("run %d: approve_plan %t, %s, plan %+v, report %q", id, run.ApprovePlan, run.Status, run.Plan, run.Report)
	}
	var proposed, byOwner int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE kind = $2),
			count(*) FILTER (WHERE kind = $3 AND data->>'by' = 'owner')
		FROM gb_agent_research_events WHERE run_id = $1`, id, jobs.EventPlanProposed, jobs.EventPlanDecided).
		Scan(&proposed, &byOwner); err != nil {
		t.Fatal(err)
	}
	if proposed != 1 || byOwner != 1 {
		t.Errorf("run %d proposed %d plans and was decided by its owner %d times, want 1 and 1", id, proposed, byOwner)
	}
}
