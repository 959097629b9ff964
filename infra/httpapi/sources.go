package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gbresearch/gb/jobs"
)

// sources lists the pages a run fetched and the search results it was
// shown; with ?tree=true, those of every agent of its tree.
func (a *api) sources(w http.ResponseWriter, r *http.Request) {
	tree := false
	switch v := r.URL.Query().Get("tree"); v {
	case "", "false":
	case "true":
		tree = true
	default:
		writeError(w, http.StatusBadRequest, "invalid_request", "tree", "tree must be true or false (got "+strconv.Quote(v)+")")
		return
	}
	run, ok := a.ownedRun(w, r)
	if !ok {
		return
	}
	list, err := jobs.Sources(r.Context(), a.Service.Pool(), run, tree)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if list == nil {
		list = []jobs.Source{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sources": list})
}
