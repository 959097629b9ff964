package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// RebuiltFrom says how a StepRequest was had: steps store what they added
// to the conversation and the hash of the behaviour bundle they were made
// with, not the system prompt and tools they were sent beside it, which
// are a function of the run, that bundle and the configuration.
const RebuiltFrom = "rebuilt from the run's settings, the bundle its step recorded and this server's configuration"

// StepRequest is what a step's model call was given besides the
// conversation: the system prompt and the tools, rebuilt at read time by
// the same builder as the step's (request), so that showing them writes
// nothing per step.
type StepRequest struct {
	RunID int64 `json:"run_id"`
	Step  int   `json:"step"`
	// Rebuilt says how the request was had (RebuiltFrom): a worker whose
	// configuration differs from the reader's (another model, no web
	// search) gave its own.
	Rebuilt string `json:"rebuilt"`
	// Behaviour is the hash of the bundle the rebuild used, shortened:
	// the step's own.
	Behaviour string         `json:"behaviour"`
	System    string         `json:"system"`
	Tools     []llm.ToolSpec `json:"tools"`
}

// stepBundleSQL reads the hash of the bundle step $2 of run $1 was made
// with ("" for a step of a gb that recorded none) and, unless it is one
// of $3 (those the process holds), the bundle.
const stepBundleSQL = `SELECT s.behaviour, b.content, b.version FROM gb_agent_research_steps s
	LEFT JOIN gb_behaviour_bundles b ON b.hash = s.behaviour AND NOT b.hash = ANY($3::text[])
	WHERE s.run_id = $1 AND s.step = $2`

// RebuildRequest rebuilds the system prompt and the tools of step of run,
// as its model call was given them: with the bundle the step recorded,
// read from Postgres when the process does not hold it, whatever the
// run's pin or GB_PIN now say. It writes nothing.
func (a *Service) RebuildRequest(ctx context.Context, run *Run, step int) (*StepRequest, error) {
	bh, err := a.stepBundle(ctx, run.ID, step)
	if err != nil {
		return nil, err
	}
	r := *run
	r.rebuild = bh
	names := a.toolNamesFor(&r)
	system, err := a.systemPrompt(&r, names)
	if err != nil {
		return nil, fmt.Errorf("error rebuilding the system prompt of run %d: %w", run.ID, err)
	}
	req := &StepRequest{RunID: run.ID, Step: step, Rebuilt: RebuiltFrom, Behaviour: ShortHash(bh.hash),
		System: system, Tools: []llm.ToolSpec{}}
	for _, n := range names {
		req.Tools = append(req.Tools, a.toolSpec(&r, n))
	}
	return req, nil
}

// stepBundle is the bundle step of run was made with; a step that
// recorded none (made before bundles were kept) gets this deploy's.
func (a *Service) stepBundle(ctx context.Context, runID int64, step int) (*behaviour, error) {
	var hash string
	var content, version *string
	err := a.pool.QueryRow(ctx, stepBundleSQL, runID, step, a.heldBundles()).Scan(&hash, &content, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %d has no step %d: %w", runID, step, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("error reading the bundle of step %d of run %d: %w", step, runID, err)
	}
	if hash == "" || hash == a.current.hash {
		return a.current, nil
	}
	if content == nil {
		if bh, ok := a.bundles.Load(hash); ok {
			return bh.(*behaviour), nil
		}
		return nil, fmt.Errorf("step %d of run %d: its bundle %s is not stored", step, runID, ShortHash(hash))
	}
	bh, err := storedBehaviour(hash, *version, *content)
	if err != nil {
		return nil, err
	}
	a.bundles.Store(hash, bh)
	return bh, nil
}
