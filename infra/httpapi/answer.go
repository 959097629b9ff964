package httpapi

import (
	"net/http"
)

// answer gives the owner's answer to the question the {id} research waits
// on (POST /v1/gb/research/{id}/answer {"text"}) and answers the run,
// resumed: another user's run is a 404, a run that waits for no answer a
// 409 saying why. A worker is woken for the resumed step.
func (a *api) answer(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var req struct {
		Text string `json:"text"`
	}
	if !decodeBody(w, r, &req, answerFields) {
		return
	}
	run, err := a.Service.Answer(r.Context(), userID(r), id, req.Text)
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
