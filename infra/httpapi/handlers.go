package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gbresearch/gb/jobs"
)

// decodeBody reads a JSON body strictly: size-capped, no unknown fields,
// exactly one value.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "", fmt.Sprintf("request body is over %d bytes", MaxBodyBytes))
		return false
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", "", "could not read request body")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		field := ""
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field = te.Field
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			field = strings.Trim(f, `"`)
			writeError(w, http.StatusBadRequest, "invalid_request", field, "unknown field "+f+"; allowed: topic, max_steps, dataset, max_cost_usd, max_tokens")
			return false
		}
		writeError(w, http.StatusBadRequest, "invalid_json", field, "request body is not valid JSON for this call: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "invalid_json", "", "request body has data after the JSON object")
		return false
	}
	return true
}

type createRequest struct {
	Topic      string  `json:"topic"`
	MaxSteps   int     `json:"max_steps"`
	Dataset    string  `json:"dataset"`
	MaxCostUSD float64 `json:"max_cost_usd"`
	MaxTokens  int64   `json:"max_tokens"`
}

func (a *api) create(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if !decodeBody(w, r, &req) {
		return
	}
	run, _, err := a.Agent.StartResearch(r.Context(), jobs.StartParams{UserID: userID(r), Topic: req.Topic,
		MaxSteps: req.MaxSteps, Dataset: req.Dataset, MaxCostUSD: req.MaxCostUSD, MaxTokens: req.MaxTokens})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if a.Kick != nil {
		if err := a.Kick(r.Context()); err != nil {
			a.Logger.WarnContext(r.Context(), "could not wake a worker; the schedule will", "run_id", run.ID, "err", err)
		}
	}
	w.Header().Set("Location", "/v1/gb/research/"+strconv.FormatInt(run.ID, 10))
	writeJSON(w, http.StatusAccepted, run)
}

type listResponse struct {
	Runs       []*jobs.Run `json:"runs"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := jobs.ListParams{UserID: userID(r), Status: q.Get("status")}
	if s := q.Get("parent_id"); s != "" {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			writeError(w, http.StatusBadRequest, "invalid_request", "parent_id", "parent_id must be a run id (a positive integer)")
			return
		}
		p.ParentID = &id
	}
	switch p.Status {
	case "", jobs.StatusQueued, jobs.StatusWorking, jobs.StatusWaiting, jobs.StatusSucceeded, jobs.StatusFailed:
	default:
		writeError(w, http.StatusBadRequest, "invalid_request", "status", "status must be one of queued, working, waiting, succeeded, failed")
		return
	}
	if s := q.Get("cursor"); s != "" {
		c, err := strconv.ParseInt(s, 10, 64)
		if err != nil || c <= 0 {
			writeError(w, http.StatusBadRequest, "invalid_request", "cursor", "cursor must be the next_cursor of a previous page")
			return
		}
		p.Before = c
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusBadRequest, "invalid_request", "limit", "limit must be between 1 and 100")
			return
		}
		p.Limit = n
	}
	runs, next, err := jobs.List(r.Context(), a.Agent.Pool(), p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	resp := listResponse{Runs: runs}
	if resp.Runs == nil {
		resp.Runs = []*jobs.Run{}
	}
	if next > 0 {
		resp.NextCursor = strconv.FormatInt(next, 10)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	d, err := jobs.Details(r.Context(), a.Agent.Pool(), userID(r), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (a *api) delete(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if err := a.Agent.Delete(r.Context(), userID(r), id); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) cancel(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	run, err := a.Agent.Cancel(r.Context(), userID(r), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

func (a *api) tree(w http.ResponseWriter, r *http.Request) {
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	runs, err := jobs.Subtree(r.Context(), a.Agent.Pool(), run.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs, "totals": jobs.Sum(runs)})
}

func (a *api) events(w http.ResponseWriter, r *http.Request) {
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	var after int64
	if s := r.URL.Query().Get("after"); s != "" {
		var err error
		if after, err = strconv.ParseInt(s, 10, 64); err != nil || after < 0 {
			writeError(w, http.StatusBadRequest, "invalid_request", "after", "after must be the seq of an event (an integer ≥ 0)")
			return
		}
	}
	evs, err := jobs.Events(r.Context(), a.Agent.Pool(), run.RootID, after, 500)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if evs == nil {
		evs = []jobs.Event{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": evs})
}

func (a *api) messages(w http.ResponseWriter, r *http.Request) {
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	msgs, err := a.Agent.Transcript(r.Context(), run.RootID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if msgs == nil {
		msgs = []jobs.TranscriptMessage{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": msgs})
}

func (a *api) sendMessage(w http.ResponseWriter, r *http.Request) {
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	var req struct {
		Text string `json:"text"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if err := a.Agent.SendFromUser(r.Context(), run, req.Text); err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "delivered"})
}

// ownedRun loads the {id} run of the caller, or answers 404.
func (a *api) ownedRun(w http.ResponseWriter, r *http.Request) (*jobs.Run, bool) {
	id, ok := pathID(w, r)
	if !ok {
		return nil, false
	}
	run, err := jobs.GetForUser(r.Context(), a.Agent.Pool(), userID(r), id)
	if err != nil {
		a.fail(w, r, err)
		return nil, false
	}
	return run, true
}
