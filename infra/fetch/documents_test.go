package fetch

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs/doctext"
	"github.com/gbresearch/gb/jobs/doctext/doctexttest"
)

// TestFetchDocuments fetches a PDF (served as octet-stream: its bytes
// decide), a DOCX, a scanned PDF and a bomb through the real fetcher.
func TestFetchDocuments(t *testing.T) {
	mux := http.NewServeMux()
	serve := func(path, ctype string, body []byte) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			_, _ = w.Write(body)
		})
	}
	serve("/paper", "application/octet-stream", doctexttest.Paper())
	serve("/review.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", doctexttest.DOCX())
	serve("/scan.pdf", "application/pdf", doctexttest.Scanned())
	serve("/bomb.pdf", "application/pdf", doctexttest.Bomb(100<<20))
	f, base := localFetcher(t, mux, Config{})
	page, err := f.Fetch(context.Background(), base+"/paper")
	if err != nil {
		t.Fatal(err)
	}
	parts := doctext.PartsOf(page.Text)
	if page.Title != doctexttest.PaperTitle || len(parts) != 3 || !strings.HasPrefix(page.Text, "[page 1]") {
		t.Errorf("paper: title %q, %d parts, text %.80q", page.Title, len(parts), page.Text)
	}
	page, err = f.Fetch(context.Background(), base+"/review.docx")
	if err != nil || !strings.Contains(page.Text, doctexttest.DOCXClaim) || page.Title != "Pump Failure Review" {
		t.Errorf("docx: %v, %+v", err, page)
	}
	for path, want := range map[string]string{"/scan.pdf": "no text layer (scanned?)", "/bomb.pdf": "MaxInflated"} {
		if _, err := f.Fetch(context.Background(), base+path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", path, err, want)
		}
	}
}
