package httpapi

import (
	"net/http"

	"github.com/gbresearch/gb/jobs"
)

// citations answers the verdicts of the last citation check of a run's
// report: each claim with its source, verdict, passage and score, and the
// run's counts (before and after a revision). 404 for a run the caller
// does not own.
func (a *api) citations(w http.ResponseWriter, r *http.Request) {
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	out, err := jobs.CitationsOf(r.Context(), a.Service.Pool(), run)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
