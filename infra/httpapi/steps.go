package httpapi

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/gbresearch/gb/jobs"
)

// steps answers a page of the committed steps of the run's subtree (the
// run and its descendants), newest first unless order=asc: each with the
// messages it added (the model's reply and tool calls, each tool's result),
// its model, tokens, cost, timings, retries and compaction. Texts and
// arguments are cut at chars characters (truncated: true, with their whole
// length); full=true with a step reads that step whole. Parameters:
//
//	run     one agent of the subtree (default: every agent; with step, the run itself)
//	step    the step of that number
//	after   steps numbered above; before: below
//	cursor  the next_cursor of the page before, in the same order
//	order   desc (default) or asc
//	limit   1 to 100 (default 20)
//	chars   where texts are cut, 100 to 20000 (default 2000)
//	full    true: nothing is cut (needs step), and the answer's request holds
//	        the system prompt and tools of the step, rebuilt from the run
//	messages false: the steps without their messages
func (a *api) steps(w http.ResponseWriter, r *http.Request) {
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	q, ok := stepQuery(w, r)
	if !ok {
		return
	}
	q.Run = run
	if q.Step != 0 && q.Agent == 0 {
		q.Agent = run.ID
	}
	page, err := jobs.Steps(r.Context(), a.Service.Pool(), q)
	if errors.Is(err, jobs.ErrNoSuchAgent) {
		writeError(w, http.StatusNotFound, "not_found", "run", fmt.Sprintf("no agent %d in research %d", q.Agent, run.ID))
		return
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if q.Step != 0 && len(page.Steps) == 0 && q.Cursor == 0 {
		writeError(w, http.StatusNotFound, "not_found", "step", fmt.Sprintf("run %d has no step %d", q.Agent, q.Step))
		return
	}
	if page.Steps == nil {
		page.Steps = []jobs.Step{}
	}
	if !q.Full || len(page.Steps) != 1 {
		writeJSON(w, http.StatusOK, page)
		return
	}
	req, err := a.stepRequest(r, page.Steps[0])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, fullStep{StepPage: page, Request: req})
}

// fullStep is the answer of full=true: the page of the one step, and the
// system prompt and tools its model call was given (jobs.StepRequest).
type fullStep struct {
	*jobs.StepPage
	Request *jobs.StepRequest `json:"request"`
}

// stepRequest rebuilds what the step's model call was given besides its
// conversation, from its run and the bundle the step recorded: nothing
// more is written per step to show it.
func (a *api) stepRequest(r *http.Request, s jobs.Step) (*jobs.StepRequest, error) {
	run, err := jobs.GetRun(r.Context(), a.Service.Pool(), s.RunID)
	if err != nil {
		return nil, fmt.Errorf("error reading run %d of step %d: %w", s.RunID, s.Step, err)
	}
	return a.Service.RebuildRequest(r.Context(), run, s.Step)
}

// stepQuery parses the query of the steps route; a bad parameter answers
// 400 naming it.
func stepQuery(w http.ResponseWriter, r *http.Request) (jobs.StepQuery, bool) {
	var q jobs.StepQuery
	ints := []struct {
		name   string
		lo, hi int64
		msg    string
		set    func(int64)
	}{
		{"run", 1, math.MaxInt64, "run must be the id of an agent of this research", func(v int64) { q.Agent = v }},
		{"step", 1, math.MaxInt32, "step must be a step number (an integer ≥ 1)", func(v int64) { q.Step = int(v) }},
		{"after", 0, math.MaxInt32, "after must be a step number (an integer ≥ 0)", func(v int64) { q.After = int(v) }},
		{"before", 0, math.MaxInt32, "before must be a step number (an integer ≥ 0)", func(v int64) { q.Before = int(v) }},
		{"cursor", 0, math.MaxInt64, "cursor must be the next_cursor of an earlier page", func(v int64) { q.Cursor = v }},
		{"limit", 1, jobs.StepLimitMax, fmt.Sprintf("limit must be from 1 to %d", jobs.StepLimitMax), func(v int64) { q.Limit = int(v) }},
		{"chars", jobs.StepCharsMin, jobs.StepCharsMax, fmt.Sprintf("chars must be from %d to %d", jobs.StepCharsMin, jobs.StepCharsMax),
			func(v int64) { q.Chars = int(v) }},
	}
	for _, p := range ints {
		if r.URL.Query().Get(p.name) == "" {
			continue
		}
		v, ok := queryInt(w, r, p.name, p.lo, p.hi, p.msg)
		if !ok {
			return q, false
		}
		p.set(v)
	}
	switch o := r.URL.Query().Get("order"); o {
	case "", "desc":
	case "asc":
		q.Asc = true
	default:
		writeError(w, http.StatusBadRequest, "invalid_request", "order", "order must be asc or desc (got "+strconv.Quote(o)+")")
		return q, false
	}
	var ok bool
	if q.Full, ok = stepsBool(w, r, "full", false); !ok {
		return q, false
	}
	messages, ok := stepsBool(w, r, "messages", true)
	if !ok {
		return q, false
	}
	q.NoMessages = !messages
	if q.Full && q.Step == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", "full", "full=true reads one step whole: give its step (and run)")
		return q, false
	}
	return q, true
}

// stepsBool parses a true/false query parameter; an absent one is def.
func stepsBool(w http.ResponseWriter, r *http.Request, name string, def bool) (bool, bool) {
	switch v := r.URL.Query().Get(name); v {
	case "":
		return def, true
	case "true":
		return true, true
	case "false":
		return false, true
	default:
		writeError(w, http.StatusBadRequest, "invalid_request", name, name+" must be true or false (got "+strconv.Quote(v)+")")
		return false, false
	}
}
