package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/fetch"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/cite"
	"github.com/gbresearch/gb/jobs/doctext/doctexttest"
	"github.com/gbresearch/gb/jobs/kb"
	"github.com/gbresearch/gb/jobs/llm"
)

// serveDocuments serves the paper PDF (as octet-stream, as some servers
// do) and the review DOCX on loopback, and returns a fetcher allowed to
// reach them and their URLs.
func serveDocuments(t *testing.T) (*fetch.Fetcher, string, string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/ice.pdf", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(doctexttest.Paper())
	})
	mux.HandleFunc("/review.docx", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
		w.Write(doctexttest.DOCX())
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	f := fetch.New(fetch.Config{Allow: []fetch.Rule{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Low: uint16(port), Top: uint16(port)}}})
	return f, srv.URL + "/ice.pdf", srv.URL + "/review.docx"
}

// TestResearchCitesDocumentPages: a research fetches a PDF paper at its
// page 3 and a DOCX at its page 2 through the real fetcher, each read
// saying which page it holds, and writes a report citing "[1, p. 3]" and
// "[2, p. 2]"; the citation check supports both and names the page each
// passage is on.
func TestResearchCitesDocumentPages(t *testing.T) {
	t.Parallel()
	fetcher, pdfURL, docxURL := serveDocuments(t)
	var mu sync.Mutex
	results := map[int][]string{}
	report := "# Ice shells and pumps\n\n" + doctexttest.PaperClaim[:len(doctexttest.PaperClaim)-1] + " [1, p. 3].\n\n" +
		doctexttest.DOCXClaim2[:len(doctexttest.DOCXClaim2)-1] + " [2, p. 2].\n\n" +
		"## Sources\n\n1. " + doctexttest.PaperTitle + " — " + pdfURL + "\n2. Pump Failure Review — " + docxURL + "\n"
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		turn := turns(req)
		mu.Lock()
		results[turn-1] = stepToolResults(req)
		mu.Unlock()
		switch turn {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("fetch", fmt.Sprintf(`{"url":%q,"page":3}`, pdfURL)),
				toolCall("fetch", fmt.Sprintf(`{"url":%q,"page":2}`, docxURL)),
				toolCall("fetch", fmt.Sprintf(`{"url":%q,"page":9}`, pdfURL))}}, nil
		case 1:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("fetch", fmt.Sprintf(`{"url":%q,"find":"milliwatts"}`, pdfURL))}}, nil
		}
		return llm.Message{Content: report}, nil
	}}
	pool := dbtest.NewPool(t)
	b := setupOn(t, pool, setupOpts{noWork: true})
	startAgent(t, jobs.Deps{Pool: pool, Model: model, Search: oneURLSearch{pdfURL}, Fetch: fetcher})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID,
		Topic: "How much heat do ice shells conduct?", Citations: jobs.CitationsFlag})
	if err != nil {
		t.Fatal(err)
	}
	run = waitEnded(t, pool, run.ID, 60*time.Second)
	if run.Status != jobs.StatusSucceeded {
		t.Fatalf("research %s: %s", run.Status, run.Error)
	}
	pdfRead, docxRead, past := results[0][0], results[0][1], results[0][2]
	if !strings.Contains(pdfRead, "Pages: 3\n[p. 3 starts at character ") || !strings.Contains(pdfRead, ", p. 3; nothing left]\n[page 3]") ||
		!strings.Contains(pdfRead, "The shell conducts 41 milliwatts") {
		t.Errorf("the PDF's page 3:\n%.1500s", pdfRead)
	}
	if !strings.Contains(docxRead, "Pages: 2\n") || !strings.Contains(docxRead, ", p. 2; nothing left]\n[page 2]") || !strings.Contains(docxRead, doctexttest.DOCXClaim2) {
		t.Errorf("the DOCX's page 2:\n%.1500s", docxRead)
	}
	if !strings.Contains(past, "page 9 is past the end: the document has 3 pages") {
		t.Errorf("a page past the end:\n%.500s", past)
	}
	if found := results[1][0]; !strings.Contains(found, " (p. 3): ") {
		t.Errorf("find does not say the passage's page:\n%.1200s", found)
	}
	if run.Citations == nil || *run.Citations != (cite.Counts{Claims: 2, Supported: 2}) {
		t.Fatalf("citations %+v, report:\n%s", run.Citations, run.Report)
	}
	got, err := jobs.CitationsOf(context.Background(), pool, run)
	if err != nil {
		t.Fatal(err)
	}
	pages := map[int]string{}
	for _, c := range got.Citations {
		pages[c.Marker] = fmt.Sprintf("%d/%s", c.Page, c.PassagePage)
	}
	if pages[1] != "3/p. 3" || pages[2] != "2/p. 2" {
		t.Errorf("cited pages / passages' pages: %v", pages)
	}
}

// TestResearchCitesKnowledgeBasePages: the same documents loaded from a
// folder into the knowledge base (kb.FromPathsWith, as gb kb load does);
// the research finds them by search, reads the PDF at page 3 and the DOCX
// at page 2, cites both pages by their files' sources, and passes the
// citation check.
func TestResearchCitesKnowledgeBasePages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string][]byte{"ice.pdf": doctexttest.Paper(), "review.docx": doctexttest.DOCX()} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, skipped, err := kb.FromPathsWith([]string{dir}, kb.ReadOptions{})
	if err != nil || len(docs) != 2 || len(skipped) != 0 {
		t.Fatalf("%v %d docs %v", err, len(docs), skipped)
	}
	pool := dbtest.NewPool(t)
	if _, err := kb.Sync(context.Background(), pool, "papers", docs); err != nil {
		t.Fatal(err)
	}
	pdfSrc, docxSrc := "file:"+filepath.ToSlash(filepath.Join(dir, "ice.pdf")), "file:"+filepath.ToSlash(filepath.Join(dir, "review.docx"))
	idRE := regexp.MustCompile(`(?m)^\[id (\d+)\] .+ \((\S+)\)$`)
	var mu sync.Mutex
	results := map[int][]string{}
	report := "# Ice shells and pumps\n\n" + doctexttest.PaperClaim[:len(doctexttest.PaperClaim)-1] + " [1, p. 3].\n\n" +
		doctexttest.DOCXClaim2[:len(doctexttest.DOCXClaim2)-1] + " [2, p. 2].\n\n" +
		"## Sources\n\n1. " + doctexttest.PaperTitle + " — " + pdfSrc + "\n2. Pump Failure Review — " + docxSrc + "\n"
	model := &scriptModel{fn: func(_ context.Context, req llm.Request) (llm.Message, error) {
		turn := turns(req)
		mu.Lock()
		results[turn-1] = stepToolResults(req)
		mu.Unlock()
		switch turn {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", `{"query": "milliwatts shell"}`),
				toolCall("search", `{"query": "seals checked night crew"}`)}}, nil
		case 1:
			ids := map[string]string{}
			for _, r := range stepToolResults(req) {
				for _, m := range idRE.FindAllStringSubmatch(r, -1) {
					ids[m[2]] = m[1]
				}
			}
			if ids[pdfSrc] == "" || ids[docxSrc] == "" {
				return llm.Message{}, fmt.Errorf("search did not find both documents: %v", ids)
			}
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("read", `{"id": `+ids[pdfSrc]+`, "page": 3}`),
				toolCall("read", `{"id": `+ids[docxSrc]+`, "page": 2}`)}}, nil
		}
		return llm.Message{Content: report}, nil
	}}
	b := setupOn(t, pool, setupOpts{noWork: true})
	startAgent(t, jobs.Deps{Pool: pool, Model: model})
	run, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Dataset: "papers",
		Topic: "How much heat do ice shells conduct?", Citations: jobs.CitationsFlag})
	if err != nil {
		t.Fatal(err)
	}
	run = waitEnded(t, pool, run.ID, 60*time.Second)
	if run.Status != jobs.StatusSucceeded {
		t.Fatalf("research %s: %s", run.Status, run.Error)
	}
	if r := results[1]; len(r) != 2 || !strings.Contains(r[0], "[p. 3 starts at character ") || !strings.Contains(r[0], ", p. 3 of 3 pages") ||
		!strings.Contains(r[1], ", p. 2 of 2 pages") || !strings.Contains(r[1], doctexttest.DOCXClaim2) {
		t.Errorf("the reads by page:\n%.3000s", strings.Join(r, "\n----\n"))
	}
	if run.Citations == nil || *run.Citations != (cite.Counts{Claims: 2, Supported: 2}) {
		t.Fatalf("citations %+v, report:\n%s", run.Citations, run.Report)
	}
	got, err := jobs.CitationsOf(context.Background(), pool, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got.Citations {
		if want := map[int]string{1: "p. 3", 2: "p. 2"}[c.Marker]; c.PassagePage != want {
			t.Errorf("[%d]: passage on %q, want %q", c.Marker, c.PassagePage, want)
		}
	}
}
