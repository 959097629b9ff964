package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gbresearch/gb/jobs"
)

// forkFields are the JSON fields of POST /v1/gb/research/{id}/fork.
var forkFields = []string{"agent", "step", "model", "pin", "max_cost_usd", "max_tokens", "max_steps", "citations", "instruction"}

// forkRequest is the body of POST /v1/gb/research/{id}/fork.
type forkRequest struct {
	// Agent is the run whose steps are replayed: the root (0 or absent).
	Agent int64 `json:"agent"`
	// Step is required: the last step replayed (0: none).
	Step       *int    `json:"step"`
	Model      string  `json:"model"`
	Pin        string  `json:"pin"`
	MaxCostUSD float64 `json:"max_cost_usd"`
	MaxTokens  int64   `json:"max_tokens"`
	// MaxSteps is nil when absent (the original's); an explicit 0 is
	// refused.
	MaxSteps    *int   `json:"max_steps"`
	Citations   string `json:"citations"`
	Instruction string `json:"instruction"`
}

// fork starts a research forked from a step of the {id} research's root
// (jobs.Service.Fork) and answers it as POST /v1/gb/research does: 202
// with its Location. Another user's research is a 404.
func (a *api) fork(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var req forkRequest
	if !decodeBody(w, r, &req, forkFields) {
		return
	}
	p, err := req.params(userID(r), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	run, err := a.Service.Fork(r.Context(), p)
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

// params are the ForkParams of the request.
func (req forkRequest) params(uid, id int64) (jobs.ForkParams, error) {
	p := jobs.ForkParams{UserID: uid, ID: id, Agent: req.Agent, Model: req.Model, Pin: req.Pin,
		MaxCostUSD: req.MaxCostUSD, MaxTokens: req.MaxTokens, Citations: req.Citations, Instruction: req.Instruction}
	if req.Step == nil {
		return p, &jobs.FieldError{Field: "step", Msg: "is required: the last step of the root to replay (0 to replay none)"}
	}
	p.Step = *req.Step
	if req.MaxSteps != nil {
		if *req.MaxSteps == 0 {
			return p, &jobs.FieldError{Field: "max_steps", Msg: fmt.Sprintf(
				"must be between 1 and %d (got 0); leave it out for the original's", jobs.MaxMaxSteps)}
		}
		p.MaxSteps = *req.MaxSteps
	}
	return p, nil
}
