package jobs

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gbresearch/gb/jobs/compact"
	"github.com/gbresearch/gb/jobs/llm"
)

// Compaction is what fitting a step's request into its model's window did
// to it (jobs/compact): the level it was compacted at (how often the
// provider had said such a request did not fit), the tool results replaced
// by a stub or cut to their head, and the prompt's size before and after,
// in gb's own token count (llm.EstimatePromptTokens).
type Compaction struct {
	Level        int `json:"level"`
	Stubbed      int `json:"stubbed"`
	Trimmed      int `json:"trimmed"`
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
}

// compactionOf is what the compaction of req into res did, or nil when it
// changed nothing and was not asked to try harder.
func compactionOf(req llm.Request, res compact.Result, level int) *Compaction {
	if res.Stubbed == 0 && res.Trimmed == 0 && level == 0 {
		return nil
	}
	return &Compaction{Level: level, Stubbed: res.Stubbed, Trimmed: res.Trimmed,
		TokensBefore: llm.EstimatePromptTokens(req), TokensAfter: res.Prompt}
}

// stepDetails is what a step's record keeps beside its messages and
// usage (migration 020): the model, when the step started, how long its
// answered model call took, when its tools started, and its request's
// compaction. The step's retries come from the ledger, in recordStepSQL.
type stepDetails struct {
	model     string
	started   time.Time
	modelTime time.Duration
	// toolsFrom is when the model's answer came back; toolTime is the
	// time the step's tools took: those that ran before its commit (and
	// the waits for messages), then those that ran in its transaction.
	toolsFrom  time.Time
	toolTime   time.Duration
	compaction *Compaction
	// version is the gb version whose code made the step, behaviour the
	// hash of the bundle it was made with (behaviour.go).
	version, behaviour string
}

// encode is the details as recordStepSQL reads them (@details).
func (d stepDetails) encode() (string, error) {
	tools := d.toolTime
	v := struct {
		Model      string      `json:"model"`
		StartedAt  *time.Time  `json:"started_at"`
		ModelMS    int64       `json:"model_ms"`
		ToolMS     int64       `json:"tool_ms"`
		Compaction *Compaction `json:"compaction"`
		Version    string      `json:"version"`
	}{Model: d.model, ModelMS: max(d.modelTime.Milliseconds(), 0), ToolMS: max(tools.Milliseconds(), 0),
		Compaction: d.compaction, Version: d.version}
	if !d.started.IsZero() {
		v.StartedAt = &d.started
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("error encoding step details: %w", err)
	}
	return string(b), nil
}

// stepRetriesSQL counts, for recordStepSQL, the model calls of the step
// (@run, @step) other than the one that answered it (@call), with what
// happened to each as the ledger says: a call still reserved is one whose
// worker died. Calls queued for capacity and never made are not counted.
const stepRetriesSQL = `SELECT count(*)::int AS n,
		coalesce(array_agg(coalesce(nullif(outcome, ''), status) ORDER BY id), '{}') AS outcomes
	FROM gb_model_calls WHERE run_id = @run AND step = @step AND id <> @call
		AND status IN ('reserved', 'settled', 'released') AND outcome <> 'capacity unused'`
