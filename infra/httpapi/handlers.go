package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
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
	// WebhookURL is notified when the research ends; "" means the user's
	// default.
	WebhookURL string `json:"webhook_url"`
	// Interactive lets the root ask its owner (ask_owner);
	// AnswerTimeoutSeconds is nil when absent (the default), an explicit
	// 0 is refused.
	Interactive          bool `json:"interactive"`
	AnswerTimeoutSeconds *int `json:"answer_timeout_seconds"`
	// ApprovePlan makes the root have its plan of sub-agents approved
	// before it spawns any.
	ApprovePlan bool `json:"approve_plan"`
	// Citations is what the research does with its report's citations:
	// off, flag or revise; "" is the service's default.
	Citations string `json:"citations"`
	// NotesFrom names earlier researches of the caller whose notes this
	// one's agents see beside its own.
	NotesFrom []int64 `json:"notes_from"`
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
	// Idempotency-Key (idempotency.go): a retry is answered here, or gets
	// the first request's run below.
	claim, answered := a.claimIdempotencyKey(w, r, req, &p)
	if answered {
		return
	}
	run, created, err := a.Service.StartResearch(r.Context(), p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if !created && claim != nil {
		a.answerRepeat(w, r, claim, run)
		return
	}
	location := "/v1/gb/research/" + strconv.FormatInt(run.ID, 10)
	a.store(r.Context(), claim, http.StatusAccepted, location, run) // before the kick: retries wait for it
	if a.Kick != nil {
		if err := a.Kick(r.Context()); err != nil {
			a.Logger.WarnContext(r.Context(), "could not wake a worker; the schedule will", "run_id", run.ID, "err", err)
		}
	}
	w.Header().Set("Location", location)
	writeJSON(w, http.StatusAccepted, run)
}

// params are the StartParams of the request: an absent max_steps is the
// default, an explicit 0 is an error (StartParams takes 0 as the default).
func (req createRequest) params(uid int64) (jobs.StartParams, error) {
	p := jobs.StartParams{UserID: uid, Topic: req.Topic, Dataset: req.Dataset,
		MaxCostUSD: req.MaxCostUSD, MaxTokens: req.MaxTokens, WebhookURL: req.WebhookURL, Interactive: req.Interactive,
		ApprovePlan: req.ApprovePlan, Citations: req.Citations, NotesFrom: req.NotesFrom}
	if t := req.AnswerTimeoutSeconds; t != nil {
		if *t == 0 {
			return p, &jobs.FieldError{Field: "answer_timeout_seconds", Msg: fmt.Sprintf(
				"must be %d to %d seconds (got 0); leave it out for the default %d", jobs.MinAnswerTimeoutSeconds,
				jobs.MaxAnswerTimeoutSeconds, jobs.DefaultAnswerTimeoutSeconds)}
		}
		p.AnswerTimeoutSeconds = *t
	}
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
	Runs       []listedRun `json:"runs"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// listedRun is a run as the list shows it: without its report unless the
// request has include=report (a page of reports is large, and a list is
// polled).
type listedRun struct {
	*jobs.Run
	Report *string `json:"report,omitempty"`
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
	if p.Status != "" && !slices.Contains(jobs.ListStatuses, p.Status) {
		writeError(w, http.StatusBadRequest, "invalid_request", "status",
			"status must be one of "+strings.Join(jobs.ListStatuses, ", "))
		return
	}
	withReport := false
	switch q.Get("include") {
	case "":
	case "report":
		withReport = true
	default:
		writeError(w, http.StatusBadRequest, "invalid_request", "include", "include must be report (or absent)")
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
		if err != nil || n < 1 || n > jobs.MaxListLimit {
			writeError(w, http.StatusBadRequest, "invalid_request", "limit", fmt.Sprintf("limit must be between 1 and %d", jobs.MaxListLimit))
			return
		}
		p.Limit = n
	}
	runs, next, err := jobs.List(r.Context(), a.Service.Pool(), p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	resp := listResponse{Runs: make([]listedRun, len(runs))}
	for i, run := range runs {
		resp.Runs[i].Run = run
		if withReport {
			resp.Runs[i].Report = &run.Report
		}
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
	d, err := jobs.Details(r.Context(), a.Service.Pool(), userID(r), id)
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
	if err := a.Service.Delete(r.Context(), userID(r), id); err != nil {
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
	run, err := a.Service.Cancel(r.Context(), userID(r), id)
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
	runs, err := jobs.Subtree(r.Context(), a.Service.Pool(), run.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	totals, err := jobs.TreeTotals(r.Context(), a.Service.Pool(), runs)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs, "totals": totals})
}

// eventsResponse is the answer of GET /v1/gb/research/{id}/events.
type eventsResponse struct {
	Events []jobs.Event `json:"events"`
	// NextAfter is the after of the next request: the seq of the last
	// event returned, or the request's after when there was none.
	NextAfter int64 `json:"next_after"`
}

// events answers the tree's events after ?after=N; with ?wait=S and none
// yet, it long-polls up to S seconds for one.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	after, ok := queryInt(w, r, "after", 0, math.MaxInt64, "after must be the seq of an event (an integer ≥ 0)")
	if !ok {
		return
	}
	wait, ok := queryInt(w, r, "wait", 0, int64(maxWaitSeconds), fmt.Sprintf(
		"wait must be a number of seconds from 0 to %d", maxWaitSeconds))
	if !ok {
		return
	}
	evs, err := jobs.WaitEvents(r.Context(), a.Service.Pool(), jobs.EventWait{RootID: run.RootID, After: after,
		Limit: 500, Wait: time.Duration(wait) * time.Second, Notifier: a.Notifier, Fallback: a.EventFallback})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	resp := eventsResponse{Events: evs, NextAfter: after}
	if resp.Events == nil {
		resp.Events = []jobs.Event{}
	}
	if n := len(evs); n > 0 {
		resp.NextAfter = evs[n-1].Seq
	}
	writeJSON(w, http.StatusOK, resp)
}

// queryInt parses the query parameter name as an integer from lo to hi; an
// absent one is lo. A bad one answers 400 with msg.
func queryInt(w http.ResponseWriter, r *http.Request, name string, lo, hi int64, msg string) (int64, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return lo, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		writeError(w, http.StatusBadRequest, "invalid_request", name, msg)
		return 0, false
	}
	return n, true
}

func (a *api) messages(w http.ResponseWriter, r *http.Request) {
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	msgs, err := a.Service.Transcript(r.Context(), run.RootID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if msgs == nil {
		msgs = []jobs.TranscriptMessage{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": msgs})
}

// notes answers the notes of the run's tree, oldest first, and the
// researches whose notes the tree reads besides its own (notes_from).
func (a *api) notes(w http.ResponseWriter, r *http.Request) {
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	notes, err := kb.Notes(r.Context(), a.Service.Pool(), run.RootID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	from, err := kb.NotesFrom(r.Context(), a.Service.Pool(), run.RootID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if notes == nil {
		notes = []kb.Note{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"root_id": run.RootID, "notes": notes, "notes_from": from})
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
	if err := a.Service.SendFromUser(r.Context(), run, req.Text); err != nil {
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
	run, err := jobs.GetForUser(r.Context(), a.Service.Pool(), userID(r), id)
	if err != nil {
		a.fail(w, r, err)
		return nil, false
	}
	return run, true
}
