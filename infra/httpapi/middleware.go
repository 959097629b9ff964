package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// MaxHeaderBytes bounds the request header fields the API reads; more
// answers 431. Servers in front of the handler should allow more (NewServer
// does), so that the answer is this JSON one rather than their own.
const MaxHeaderBytes = 32 << 10

// maxWaitSeconds is the longest long poll of the events route.
const maxWaitSeconds = int(jobs.MaxEventWait / time.Second)

// withTimeout bounds the work of each request, its database calls
// included, with a context deadline; a long poll (?wait=S) gets S more,
// and an event stream its whole life, stream (it bounds each of its
// database calls by d itself).
func withTimeout(d, stream time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		extra := longPoll(r)
		if isEventStream(r) {
			extra = stream + streamMargin
		}
		ctx, cancel := context.WithTimeout(r.Context(), d+extra)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// longPoll is the wait a request asks for with ?wait=S, at most
// maxWaitSeconds; the route that takes it checks it.
func longPoll(r *http.Request) time.Duration {
	n, err := strconv.Atoi(r.URL.Query().Get("wait"))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(min(n, maxWaitSeconds)) * time.Second
}

// limitHeaders answers 431 when the request's header fields are over
// MaxHeaderBytes.
func limitHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := headerBytes(r); n > MaxHeaderBytes {
			writeError(w, http.StatusRequestHeaderFieldsTooLarge, "headers_too_large", "",
				fmt.Sprintf("request header fields are %d bytes; at most %d are allowed", n, MaxHeaderBytes))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// headerBytes is the size of the request's header fields as sent: each
// "Name: value\r\n" line, Host included.
func headerBytes(r *http.Request) int {
	n := len("Host: \r\n") + len(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(": \r\n") + len(v)
		}
	}
	return n
}

// jsonErrors gives a JSON error body to every answer of next that is not a
// success and has none: the mux's own 404s, 405s (which keep their Allow
// header) and path-cleaning redirects (which keep their Location).
func jsonErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&jsonErrorWriter{ResponseWriter: w, r: r}, r)
	})
}

// jsonErrorWriter replaces the body of an answer of status 300 or more
// whose Content-Type is not JSON by a JSON error body.
type jsonErrorWriter struct {
	http.ResponseWriter
	r *http.Request
	// wrote is set once the final status is written; replaced when its body
	// is ours, and what the handler writes is dropped.
	wrote, replaced bool
}

// WriteHeader writes the status, replacing the body of a non-JSON error.
func (w *jsonErrorWriter) WriteHeader(status int) {
	if w.wrote || status < 200 {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.wrote = true
	if status < 300 || isJSON(w.Header().Get("Content-Type")) {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.replaced = true
	w.Header().Del("Content-Length")
	code, msg := describeStatus(status, w.Header(), w.r)
	writeError(w.ResponseWriter, status, code, "", msg)
}

// Write writes body bytes, or drops them when the body was replaced.
func (w *jsonErrorWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.replaced {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *jsonErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func isJSON(contentType string) bool {
	return strings.HasPrefix(contentType, "application/json")
}

// describeStatus gives the error code and message of an answer that the
// mux, not a handler, made.
func describeStatus(status int, h http.Header, r *http.Request) (code, msg string) {
	switch {
	case status == http.StatusMethodNotAllowed:
		return "method_not_allowed", fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, h.Get("Allow"))
	case status == http.StatusNotFound:
		return "not_found", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)
	case status >= 300 && status < 400 && h.Get("Location") != "":
		return "redirect", fmt.Sprintf("%s is not the canonical path; send the request to %s", r.URL.Path, h.Get("Location"))
	}
	text := cmp.Or(http.StatusText(status), "error")
	return strings.ReplaceAll(strings.ToLower(text), " ", "_"), text
}
