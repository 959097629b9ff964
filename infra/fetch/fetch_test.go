package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// localFetcher serves h on loopback and returns a Fetcher allowed to reach
// it, and the server's base URL under a stub name.
func localFetcher(t *testing.T, h http.Handler, cfg Config) (*Fetcher, string) {
	t.Helper()
	d := newDialer(t)
	_, port := d.serve(t, h)
	cfg.Resolver = stubResolver{"docs.example": {addr("127.0.0.1")}}
	cfg.Dial = d.Dial
	cfg.Allow = []Rule{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Low: port, Top: port}}
	cfg.Logger = quietLogger()
	return New(cfg), fmt.Sprintf("http://docs.example:%d", port)
}

// TestFetchFailuresSayWhat: statuses, unreadable types, oversized bodies
// and slow servers are errors that say what happened.
func TestFetchFailuresSayWhat(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("a", 2048)))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a": [1, 2]}`)
	})
	mux.HandleFunc("/sniffed", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil
		fmt.Fprint(w, "<!DOCTYPE html><html><head><title>Sniffed</title></head><body><p>sniffed body</p></body></html>")
	})
	f, base := localFetcher(t, mux, Config{MaxBytes: 1024, Timeout: 300 * time.Millisecond})
	for path, want := range map[string]string{
		"/missing": "404 Not Found",
		"/image":   `content type "image/png" is not one fetch reads`,
		"/big":     "larger than the 1024-byte cap",
		"/slow":    "timed out after 300ms",
	} {
		page, err := f.Fetch(context.Background(), base+path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to say %q", path, err, want)
		}
		if errors.Is(err, ErrRefused) {
			t.Errorf("%s: a failure is not a refusal: %v", path, err)
		}
		if path == "/missing" && page.Status != http.StatusNotFound {
			t.Errorf("%s: status %d", path, page.Status)
		}
	}
	page, err := f.Fetch(context.Background(), base+"/json")
	if err != nil || page.Text != `{"a": [1, 2]}` || page.ContentType != "application/json" || page.Bytes != 13 {
		t.Errorf("json: %+v, %v; want the body as it is", page, err)
	}
	page, err = f.Fetch(context.Background(), base+"/sniffed")
	if err != nil || page.Title != "Sniffed" || !strings.Contains(page.Text, "sniffed body") {
		t.Errorf("sniffed html: %+v, %v", page, err)
	}
}
