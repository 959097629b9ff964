package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gbresearch/gb/jobs"
)

// KeyRoutes are the routes of the caller's own API keys. They take a key
// like Routes, and are kept apart from Routes until the deployment
// template routes them too.
var KeyRoutes = []Route{
	{"GET", "/v1/gb/keys"},
	{"POST", "/v1/gb/keys"},
	{"DELETE", "/v1/gb/keys/{id}"},
}

// keyFields are the JSON fields of the body of POST /v1/gb/keys.
var keyFields = []string{"name", "expires_in_days"}

// keyRequest is the body of POST /v1/gb/keys; an absent or null field is
// the default (no name, no expiry).
type keyRequest struct {
	Name          *string `json:"name"`
	ExpiresInDays *int    `json:"expires_in_days"`
}

// options are the KeyOptions of the request; an explicit 0 days is
// refused rather than taken as "never".
func (req keyRequest) options() (jobs.KeyOptions, error) {
	var o jobs.KeyOptions
	if req.Name != nil {
		o.Name = *req.Name
	}
	if req.ExpiresInDays != nil {
		if *req.ExpiresInDays == 0 {
			return o, &jobs.FieldError{Field: "expires_in_days", Msg: fmt.Sprintf(
				"must be between 1 and %d (got 0); leave it out for a key that never expires", jobs.MaxKeyDays)}
		}
		o.ExpiresInDays = *req.ExpiresInDays
	}
	return o, nil
}

// listKeys answers the caller's keys, newest first, revoked and expired
// ones included.
func (a *api) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := jobs.ListKeys(r.Context(), a.Service.Pool(), userID(r))
	if err != nil {
		a.failKey(w, r, err)
		return
	}
	if keys == nil {
		keys = []jobs.APIKey{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// createKey makes a key for the caller and answers it, the one time it is
// shown. The body may be empty: a key with no name that never expires.
func (a *api) createKey(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var req keyRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if e := decodeStrict(body, &req, keyFields); e != nil {
			writeError(w, http.StatusBadRequest, e.Code, e.Field, e.Msg)
			return
		}
	}
	o, err := req.options()
	if err != nil {
		a.failKey(w, r, err)
		return
	}
	k, err := jobs.IssueKey(r.Context(), a.Service.Pool(), userID(r), o)
	if err != nil {
		a.failKey(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, k)
}

// revokeKey revokes one of the caller's keys, the one in use included,
// and answers it as it is now.
func (a *api) revokeKey(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusNotFound, "not_found", "", "no API key with id "+strconv.Quote(r.PathValue("id")))
		return
	}
	k, err := jobs.RevokeKey(r.Context(), a.Service.Pool(), userID(r), id)
	if err != nil {
		a.failKey(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, k)
}

// failKey answers the errors of the key routes, and passes the others to
// fail.
func (a *api) failKey(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, jobs.ErrKeyNotFound):
		writeError(w, http.StatusNotFound, "not_found", "", "no API key of yours with id "+strconv.Quote(r.PathValue("id")))
	case errors.Is(err, jobs.ErrTooManyKeys):
		writeError(w, http.StatusConflict, "too_many_keys", "", err.Error())
	default:
		a.fail(w, r, err)
	}
}

// keyRefusal is the message of a 401 for a key that Authenticate refused;
// it never shows the key.
func keyRefusal(err error) string {
	switch {
	case errors.Is(err, jobs.ErrKeyRevoked):
		return "API key was revoked; use another key or create one"
	case errors.Is(err, jobs.ErrKeyExpired):
		return "API key has expired; use another key or create one"
	}
	return "invalid API key"
}
