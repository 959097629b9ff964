package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gbresearch/gb/jobs"
)

func TestDBUnavailableTellsConnectionFailuresFromQueryErrors(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("error doing it: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"EOF", wrap(io.EOF), true},
		{"unexpected EOF", wrap(io.ErrUnexpectedEOF), true},
		{"conn closed", wrap(pgconn.ErrConnClosed), true},
		{"net error", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), true},
		{"closed socket", wrap(net.ErrClosed), true},
		{"request deadline", wrap(context.DeadlineExceeded), true},
		{"admin shutdown", wrap(&pgconn.PgError{Code: "57P01"}), true},
		{"crash shutdown", wrap(&pgconn.PgError{Code: "57P02"}), true},
		{"cannot connect now", wrap(&pgconn.PgError{Code: "57P03"}), true},
		{"connection failure", wrap(&pgconn.PgError{Code: "08006"}), true},
		{"unique violation", wrap(&pgconn.PgError{Code: "23505"}), false},
		{"bad encoding", wrap(&pgconn.PgError{Code: "22021"}), false},
		{"query cancelled", wrap(&pgconn.PgError{Code: "57014"}), false},
		{"not found", wrap(jobs.ErrNotFound), false},
		{"plain", errors.New("boom"), false},
		{"nil", nil, false},
	} {
		if got := dbUnavailable(tc.err); got != tc.want {
			t.Errorf("%s: dbUnavailable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestFailAnswers503WhenTheDatabaseIsDown checks the path of an error that
// happens after authentication, in a handler.
func TestFailAnswers503WhenTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	a := &api{Deps: Deps{Logger: slog.New(slog.DiscardHandler)}}
	for _, err := range []error{
		fmt.Errorf("error loading run: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}),
		fmt.Errorf("error loading run: %w", io.ErrUnexpectedEOF),
	} {
		rec := httptest.NewRecorder()
		a.fail(rec, httptest.NewRequest("GET", "/v1/gb/research/1", nil), err)
		assertUnavailable(t, rec.Result())
	}
	rec := httptest.NewRecorder()
	a.fail(rec, httptest.NewRequest("GET", "/v1/gb/research/1", nil), errors.New("a bug"))
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("a bug: got %d Retry-After %q, want 500 without Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

func assertUnavailable(t *testing.T, resp *http.Response) {
	t.Helper()
	var body errorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("503 body is not JSON: %v", err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || body.Error.Code != "unavailable" ||
		resp.Header.Get("Retry-After") != fmt.Sprint(RetryAfterSeconds) {
		t.Fatalf("got %d %+v Retry-After %q, want 503 unavailable with Retry-After %d",
			resp.StatusCode, body, resp.Header.Get("Retry-After"), RetryAfterSeconds)
	}
}
