package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gbresearch/gb/infra/db"
)

// readiness is what GET /readyz answers: whether this process can serve
// requests now, and if not, why.
type readiness struct {
	Status string `json:"status"`
	// Schema is the newest migration applied and the newest this version
	// needs.
	Schema *schemaVersions `json:"schema,omitempty"`
	Reason string          `json:"reason,omitempty"`
}

type schemaVersions struct {
	Current int64 `json:"current"`
	Needed  int64 `json:"needed"`
}

// ready answers 200 when the database answers within DBTimeout and holds
// every migration this version needs, and 503 with the reason otherwise
// (the database unreachable, or not migrated yet for this version). Unlike
// /healthz it touches the database, so a load balancer or a deploy's
// check can hold traffic from a process that would answer 503.
func (a *api) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), a.DBTimeout)
	defer cancel()
	pool := a.Service.Pool()
	if err := pool.Ping(ctx); err != nil {
		a.notReady(w, readiness{Reason: fmt.Sprintf("the database does not answer: %v", err)})
		return
	}
	current, needed, err := db.SchemaVersions(ctx, pool)
	if err != nil {
		a.notReady(w, readiness{Reason: err.Error()})
		return
	}
	v := &schemaVersions{Current: current, Needed: needed}
	if current < needed {
		a.notReady(w, readiness{Schema: v, Reason: fmt.Sprintf(
			"the database's schema is at migration %d and this version needs %d: run the migrate function", current, needed)})
		return
	}
	writeJSON(w, http.StatusOK, readiness{Status: "ready", Schema: v})
}

func (a *api) notReady(w http.ResponseWriter, body readiness) {
	body.Status = "not_ready"
	a.Logger.Warn("not ready", "reason", body.Reason)
	w.Header().Set("Retry-After", "5")
	writeJSON(w, http.StatusServiceUnavailable, body)
}
