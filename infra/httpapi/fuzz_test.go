package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
)

// FuzzRequests sends any method, target, Authorization header and body
// through the whole handler, and decodes the body as each route that takes
// one does. It needs no database: the handler's pool points at a closed
// port, so a request whose key reaches it must answer 503 "unavailable";
// every other answer must be below 500, and every answer a JSON body. A
// decoded body must be an object of exactly the route's fields, in valid
// UTF-8, and a research it starts must pass every limit.
//
//	go test -run XXX -fuzz FuzzRequests -fuzztime 20s ./infra/httpapi/
func FuzzRequests(f *testing.F) {
	h := New(Deps{Service: unreachableAgent(f), Logger: slog.New(slog.DiscardHandler)})
	f.Fuzz(func(t *testing.T, method, target, auth string, body []byte) {
		checkHandler(t, h, method, target, auth, body)
		var create createRequest
		if checkDecode(t, body, createFields, &create) {
			checkStart(t, body, create)
		}
		var msg struct {
			Text string `json:"text"`
		}
		if checkDecode(t, body, messageFields, &msg) {
			checkNoReplacement(t, body, msg.Text)
		}
	})
}

// unreachableAgent is an agent whose pool connects to a port nobody
// listens on (pgxpool connects lazily).
func unreachableAgent(f *testing.F) *jobs.Service {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	pool, err := pgxpool.New(context.Background(), "postgres://gb@"+addr+"/gb?sslmode=disable&connect_timeout=2")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(pool.Close)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		f.Fatal(err)
	}
	return agent
}

// checkHandler serves one request and checks its answer.
func checkHandler(t *testing.T, h http.Handler, method, target, auth string, body []byte) {
	if !strings.HasPrefix(target, "/") || !validHeaderValue(auth) {
		return // a server refuses these before any handler sees them
	}
	r, err := http.NewRequest(method, "http://api"+target, bytes.NewReader(body))
	if err != nil {
		return
	}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	e := jsonErrorOf(t, rec)
	switch {
	case rec.Code == http.StatusServiceUnavailable:
		if e.Code != "unavailable" || rec.Header().Get("Retry-After") == "" || !strings.Contains(auth, "gb_") {
			t.Fatalf("%s %q: 503 %+v Retry-After %q for a key that cannot reach the database",
				method, target, e, rec.Header().Get("Retry-After"))
		}
	case rec.Code >= 500:
		t.Fatalf("%s %q: %d %s", method, target, rec.Code, rec.Body)
	case rec.Code == http.StatusMethodNotAllowed && rec.Header().Get("Allow") == "":
		t.Fatalf("%s %q: 405 without Allow", method, target)
	case rec.Code >= 300 && rec.Code < 400 && rec.Header().Get("Location") == "":
		t.Fatalf("%s %q: %d without Location", method, target, rec.Code)
	}
}

// jsonErrorOf checks that an answer is JSON and, if not a success, an
// error body.
func jsonErrorOf(t *testing.T, rec *httptest.ResponseRecorder) errorDetail {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%d answer with Content-Type %q: %q", rec.Code, ct, rec.Body)
	}
	var e errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("%d answer is not JSON: %q", rec.Code, rec.Body)
	}
	if rec.Code >= 300 && (e.Error.Code == "" || e.Error.Message == "") {
		t.Fatalf("%d answer is not a JSON error: %q", rec.Code, rec.Body)
	}
	return e.Error
}

// checkDecode decodes body as a route with the allowed fields does, and
// checks that it either answered an error or accepted a body it should.
func checkDecode(t *testing.T, body []byte, allowed []string, v any) bool {
	rec := httptest.NewRecorder()
	ok := decodeBody(rec, httptest.NewRequest("POST", "/", bytes.NewReader(body)), v, allowed)
	if !ok {
		if e := jsonErrorOf(t, rec); rec.Code != http.StatusBadRequest && rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("refused with %d %+v, want 400 or 413", rec.Code, e)
		}
		return false
	}
	if rec.Body.Len() != 0 || len(body) > MaxBodyBytes || !utf8.Valid(body) || !json.Valid(body) {
		t.Fatalf("accepted %q (%d bytes) and wrote %q", body, len(body), rec.Body)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		t.Fatalf("accepted %q, which is not a JSON object: %v", body, err)
	}
	for k := range fields {
		if !slices.Contains(allowed, k) {
			t.Fatalf("accepted %q with the field %q, allowed: %v", body, k, allowed)
		}
	}
	return true
}

// checkStart checks that a research a decoded body would start passes
// every limit, and that an explicit max_steps of 0 is never the default.
func checkStart(t *testing.T, body []byte, req createRequest) {
	checkNoReplacement(t, body, req.Topic+req.Dataset)
	p, err := req.params(1)
	if err == nil {
		err = p.Validate()
	}
	var fe *jobs.FieldError
	switch {
	case errors.As(err, &fe):
		if !slices.Contains(createFields, fe.Field) {
			t.Fatalf("%q: error on %q, not a field of the request", body, fe.Field)
		}
		return
	case err != nil:
		t.Fatalf("%q: %v is not a field error", body, err)
	}
	if req.MaxSteps != nil && *req.MaxSteps == 0 {
		t.Fatalf("%q: an explicit max_steps 0 was accepted as %d", body, p.MaxSteps)
	}
	n := utf8.RuneCountInString(p.Topic)
	if n < 1 || n > jobs.MaxTopicLen || !utf8.ValidString(p.Topic) || strings.ContainsRune(p.Topic, 0) ||
		!utf8.ValidString(p.Dataset) || strings.ContainsRune(p.Dataset, 0) || p.MaxSteps < 1 || p.MaxSteps > jobs.MaxMaxSteps {
		t.Fatalf("%q: accepted %+v", body, p)
	}
}

// checkNoReplacement fails when a decoded string holds U+FFFD that the body
// did not send: encoding/json's silent repair of invalid text.
func checkNoReplacement(t *testing.T, body []byte, decoded string) {
	if strings.ContainsRune(decoded, utf8.RuneError) &&
		!bytes.Contains(body, []byte("\uFFFD")) && !bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`)) {
		t.Fatalf("%q decoded to %q: invalid text was replaced, not refused", body, decoded)
	}
}

// validHeaderValue reports whether a server would take s as a header
// value: no control characters but tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
