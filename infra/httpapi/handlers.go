package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gbresearch/gb/jobs"
)

// createRequest is the body of POST /v1/gb/research; its JSON fields are
// createFields.
type createRequest struct {
	Topic string `json:"topic"`
	// MaxSteps is nil when absent (the default); an explicit 0 is refused.
	MaxSteps   *int    `json:"max_steps"`
	Dataset    string  `json:"dataset"`
	MaxCostUSD float64 `json:"max_cost_usd"`
	MaxTokens  int64   `json:"max_tokens"`
}

func (a *api) create(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if !decodeBody(w, r, &req, createFields) {
		return
	}
	p, err := req.params(userID(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	run, _, err := a.Agent.StartResearch(r.Context(), p)
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

// params are the StartParams of the request: an absent max_steps is the
// default, an explicit 0 is an error (StartParams takes 0 as the default).
func (req createRequest) params(uid int64) (jobs.StartParams, error) {
	p := jobs.StartParams{UserID: uid, Topic: req.Topic, Dataset: req.Dataset,
		MaxCostUSD: req.MaxCostUSD, MaxTokens: req.MaxTokens}
	if req.MaxSteps != nil {
		if *req.MaxSteps == 0 {
			return p, &jobs.FieldError{Field: "max_steps", Msg: fmt.Sprintf(
				"must be between 1 and %d (got 0); leave it out for the default %d", jobs.MaxMaxSteps, jobs.DefaultMaxSteps)}
		}
		p.MaxSteps = *req.MaxSteps
	}
	return p, nil
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
	if !decodeBody(w, r, &req, messageFields) {
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
