package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gbresearch/gb/jobs"
)

// RetryAfterSeconds is the Retry-After of a 503 answered while the database
// is unreachable.
const RetryAfterSeconds = 5

// RetryAfterTooManySeconds is the Retry-After of a 429 answered to a user
// who already has jobs.MaxWorkingPerUser researches working: about when
// one of them may have ended.
const RetryAfterTooManySeconds = 60

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, field, msg string) {
	writeJSON(w, status, errorBody{errorDetail{Code: code, Field: field, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// unavailable answers 503: the database cannot be reached now.
func unavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	writeError(w, http.StatusServiceUnavailable, "unavailable", "",
		"the database is unavailable; retry in "+strconv.Itoa(RetryAfterSeconds)+" seconds")
}

// dbUnavailable reports whether err means the database could not be
// reached or did not answer in time, rather than that a query was wrong:
// a failed connect, a broken connection, a timeout, or a server that is
// shutting down or not accepting connections.
func dbUnavailable(err error) bool {
	var netErr net.Error
	switch {
	case err == nil:
		return false
	case jobs.DatabaseUnavailable(err), errors.As(err, &netErr):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, context.DeadlineExceeded):
		return true
	case pgconn.Timeout(err):
		return true
	}
	return false
}
