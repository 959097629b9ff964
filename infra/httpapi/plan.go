package httpapi

import (
	"net/http"

	"github.com/gbresearch/gb/jobs"
)

// decidePlan gives the owner's decision on the plan of sub-agents the {id}
// research proposed (POST /v1/gb/research/{id}/plan {"decision",
// "subagents", "note"}) and answers the run, resumed: another user's run
// is a 404, a run that waits for no decision a 409 saying why. A worker is
// woken for the resumed step.
func (a *api) decidePlan(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var req struct {
		Decision  string             `json:"decision"`
		Subagents []jobs.SpawnParams `json:"subagents"`
		Note      *string            `json:"note"`
	}
	if !decodeBody(w, r, &req, planFields) {
		return
	}
	d := jobs.PlanDecision{Decision: req.Decision, Subagents: req.Subagents}
	if req.Note != nil {
		d.Note = *req.Note
	}
	run, err := a.Service.DecidePlan(r.Context(), userID(r), id, d)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if a.Kick != nil {
		if err := a.Kick(r.Context()); err != nil {
			a.Logger.WarnContext(r.Context(), "could not wake a worker; the schedule will", "run_id", run.ID, "err", err)
		}
	}
	writeJSON(w, http.StatusOK, run)
}
