package jobs

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// This file pins a research to the version of what shapes its behaviour:
// the prompt parts, the sub-agent types, the tool schemas, the profiles of
// the models and the limits in effect. They make a bundle, stored once in
// gb_behaviour_bundles by the sha256 of its content (migration 029). A
// run's first step pins it to the bundle it used (gb_agent_research_runs
// .pinned, written by the step's commit); a sub-agent starts pinned to its
// parent's. Every later step builds its request from the pinned bundle,
// read with the job's load of the run and kept in the process by hash,
// so that a deploy that changes the prompts or the types does not change
// a research in flight. With Config.Pin latest (GB_PIN=latest) a run
// takes the deploy's bundle at its next step instead, and that step's
// commit records the move (event version, from and to). What no pin can
// keep is the code: a deploy's Go code makes the remaining steps, and
// each step records the gb version that made it (steps.version).

// Pin modes (Config.Pin).
const (
	// PinRun keeps a research on the bundle it started with.
	PinRun = "run"
	// PinLatest moves a research to the deploy's bundle at its next step.
	PinLatest = "latest"
)

// checkPinMode checks a Config.Pin ("" is PinRun).
func checkPinMode(field, mode string) error {
	switch mode {
	case "", PinRun, PinLatest:
		return nil
	}
	return &FieldError{field, fmt.Sprintf("%q is not a pin mode; the modes are %s and %s", mode, PinRun, PinLatest)}
}

// stamped is the gb version a build stamps in with -ldflags
// "-X github.com/gbresearch/gb/jobs.stamped=..." (the Makefile's
// GB_VERSION).
var stamped string

// BuildVersion is the version of this binary: the one its build stamped
// in, else its main module's version and its commit (with +dirty for
// uncommitted changes) as the Go build recorded them; "dev" when it
// recorded neither.
func BuildVersion() string {
	if stamped != "" {
		return stamped
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		v += " " + rev[:min(len(rev), 12)] + dirty
	}
	return v
}

// ShortHash is the first 12 characters of a bundle's hash, as shown.
func ShortHash(h string) string { return h[:min(len(h), 12)] }

// pinnedProfile is the part of a model's profile that shapes its
// requests; its price is the provider's and is not pinned.
type pinnedProfile struct {
	ContextWindow  int  `json:"context_window"`
	StepCap        int  `json:"step_cap"`
	ReportCap      int  `json:"report_cap"`
	MaxCompletion  int  `json:"max_completion"`
	OutputBurndown int  `json:"output_burndown"`
	Reasoning      bool `json:"reasoning"`
}

// bundleLimits are the configured limits a bundle keeps.
type bundleLimits struct {
	MaxCompletionTokens int `json:"max_completion_tokens"`
	PromptBudget        int `json:"prompt_budget"`
	MaxReportChars      int `json:"max_report_chars"`
}

// bundleContent is what a bundle's hash is the sha256 of, as JSON.
type bundleContent struct {
	Prompts  *prompts.Set             `json:"prompts"`
	Types    []*AgentType             `json:"types"`
	Tools    []llm.ToolSpec           `json:"tools"`
	Profiles map[string]pinnedProfile `json:"profiles"`
	Limits   bundleLimits             `json:"limits"`
}

// behaviour is a bundle in use.
type behaviour struct {
	hash    string
	version string // the gb version that stored it first
	content bundleContent
	encoded []byte
	types   *Types
	tools   map[string]llm.ToolSpec
}

// newBehaviour makes a bundle of c, hashed.
func newBehaviour(c bundleContent, version string) (*behaviour, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("error encoding the behaviour bundle: %w", err)
	}
	sum := sha256.Sum256(b)
	return ready(&behaviour{hash: hex.EncodeToString(sum[:]), version: version, content: c, encoded: b})
}

// storedBehaviour is a bundle read back from Postgres, checked against its
// hash.
func storedBehaviour(hash, version, content string) (*behaviour, error) {
	if sum := sha256.Sum256([]byte(content)); hex.EncodeToString(sum[:]) != hash {
		return nil, fmt.Errorf("behaviour bundle %s: its content does not match its hash", ShortHash(hash))
	}
	bh := &behaviour{hash: hash, version: version, encoded: []byte(content)}
	if err := json.Unmarshal(bh.encoded, &bh.content); err != nil {
		return nil, fmt.Errorf("error decoding behaviour bundle %s: %w", ShortHash(hash), err)
	}
	bh, err := ready(bh)
	if err != nil {
		return nil, fmt.Errorf("behaviour bundle %s: %w", ShortHash(hash), err)
	}
	return bh, nil
}

// ready builds a bundle's lookups: its types and its tools by name.
func ready(bh *behaviour) (*behaviour, error) {
	if bh.content.Prompts == nil {
		return nil, errors.New("the behaviour bundle has no prompts")
	}
	bh.types = &Types{byName: map[string]*AgentType{}}
	for _, at := range bh.content.Types {
		bh.types.byName[at.Name] = at
		bh.types.names = append(bh.types.names, at.Name)
	}
	bh.tools = make(map[string]llm.ToolSpec, len(bh.content.Tools))
	for _, s := range bh.content.Tools {
		bh.tools[s.Name] = s
	}
	return bh, nil
}

// currentBehaviour is the bundle of this process: its prompts and types,
// every tool's schema as its agents would be sent it, the profiles of its
// models and its limits.
func (a *Service) currentBehaviour(set *prompts.Set, version string) (*behaviour, error) {
	c := bundleContent{Prompts: set, Profiles: map[string]pinnedProfile{}, Limits: bundleLimits{
		MaxCompletionTokens: a.config.MaxCompletionTokens, PromptBudget: a.config.PromptBudget,
		MaxReportChars: a.config.MaxReportChars}}
	for _, n := range a.types.Names() {
		at, _ := a.types.Get(n)
		c.Types = append(c.Types, at)
	}
	for _, n := range toolList() {
		c.Tools = append(c.Tools, a.liveToolSpec(n))
	}
	for _, m := range a.models {
		p := profileOf(m)
		c.Profiles[m.Name()] = pinnedProfile{ContextWindow: p.ContextWindow, StepCap: p.StepCap, ReportCap: p.ReportCap,
			MaxCompletion: p.MaxCompletion, OutputBurndown: p.OutputBurndown, Reasoning: p.Reasoning}
	}
	sort.Slice(c.Tools, func(i, j int) bool { return c.Tools[i].Name < c.Tools[j].Name })
	return newBehaviour(c, version)
}

// pinOf is the bundle a run's next step is made with: the deploy's with
// GB_PIN=latest or for a run not pinned yet, else the one it is pinned
// to, which the job's load read (outside a step, a bundle the process
// does not hold is logged and the deploy's used).
func (a *Service) pinOf(run *Run) *behaviour {
	if run != nil && run.rebuild != nil {
		return run.rebuild
	}
	if run == nil || run.Pinned == "" || run.Pinned == a.current.hash || a.config.Pin == PinLatest {
		return a.current
	}
	if bh, ok := a.bundles.Load(run.Pinned); ok {
		return bh.(*behaviour)
	}
	// A step never gets here (its load read the bundle); the API's and
	// the scheduler's checks may.
	a.logger.Debug("the bundle a run is pinned to is not loaded here; this deploy's is used",
		"run_id", run.ID, "pinned", ShortHash(run.Pinned), "current", ShortHash(a.current.hash))
	return a.current
}

// childPin is the bundle a sub-agent of parent starts pinned to: the one
// parent's step is made with, when it is stored (the parent's own, or
// this deploy's once the process stored it), else the parent's; nil
// (pinned by its first step) when the parent is not pinned yet.
func (a *Service) childPin(parent *Run) *string {
	h := a.pinOf(parent).hash
	if h == parent.Pinned || (h == a.current.hash && a.bundleStored.Load()) {
		return &h
	}
	if parent.Pinned != "" {
		return &parent.Pinned
	}
	return nil
}

// storeBundleSQL stores a bundle; one already stored is left as it is.
const storeBundleSQL = `INSERT INTO gb_behaviour_bundles (hash, content, version) VALUES ($1, $2, $3)
	ON CONFLICT (hash) DO NOTHING`

// pinnedBundleSQL reads the bundle run $1 is pinned to, unless it is one
// of $2 (those the process holds).
const pinnedBundleSQL = `SELECT b.hash, b.content, b.version FROM gb_agent_research_runs r
	JOIN gb_behaviour_bundles b ON b.hash = r.pinned WHERE r.id = $1 AND NOT b.hash = ANY($2::text[])`

// queueLoadBundle queues, on the batch that loads run id, the storing of
// the deploy's bundle (once per process: the steps it makes pin runs to
// it) and the read of the bundle the run is pinned to when the process
// does not hold it; after lets the caller mark the first done.
func (a *Service) queueLoadBundle(b *pgx.Batch, id int64) (after func()) {
	store := !a.bundleStored.Load()
	if store {
		b.Queue(storeBundleSQL, a.current.hash, string(a.current.encoded), a.current.version)
	}
	if a.config.Pin != PinLatest {
		b.Queue(pinnedBundleSQL, id, a.heldBundles()).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var hash, version, content string
				if err := rows.Scan(&hash, &content, &version); err != nil {
					return err
				}
				bh, err := storedBehaviour(hash, version, content)
				if err != nil {
					return err
				}
				a.bundles.Store(hash, bh)
			}
			return rows.Err()
		})
	}
	return func() {
		if store {
			a.bundleStored.Store(true)
		}
	}
}

// heldBundles are the hashes of the bundles the process holds.
func (a *Service) heldBundles() []string {
	held := []string{a.current.hash}
	a.bundles.Range(func(k, _ any) bool {
		held = append(held, k.(string))
		return true
	})
	return held
}

// Behaviour is the deploy's version: the gb version and the hash of its
// bundle.
func (a *Service) Behaviour() (version, hash string) { return a.version, a.current.hash }

// profileFor is the profile a run's requests are built with: the model's,
// with the request-shaping parts its bundle keeps.
func (a *Service) profileFor(run *Run) llm.Profile {
	m := a.modelFor(run)
	p := profileOf(m)
	if pp, ok := a.pinOf(run).content.Profiles[m.Name()]; ok {
		p.ContextWindow, p.StepCap, p.ReportCap = pp.ContextWindow, pp.StepCap, pp.ReportCap
		p.MaxCompletion, p.OutputBurndown, p.Reasoning = pp.MaxCompletion, pp.OutputBurndown, pp.Reasoning
	}
	return p
}

// limitsFor are the configured limits a run's bundle keeps (the
// agent's own where the bundle has none).
func (a *Service) limitsFor(run *Run) bundleLimits {
	l := a.pinOf(run).content.Limits
	l.MaxCompletionTokens = cmp.Or(l.MaxCompletionTokens, a.config.MaxCompletionTokens)
	l.PromptBudget = cmp.Or(l.PromptBudget, a.config.PromptBudget)
	l.MaxReportChars = cmp.Or(l.MaxReportChars, a.config.MaxReportChars)
	return l
}

// maxCompletionFor is the configured completion cap of a run's calls.
func (a *Service) maxCompletionFor(run *Run) int { return a.limitsFor(run).MaxCompletionTokens }

// versionEvent is the event of a step that moved its run from one bundle
// to another.
func versionEvent(step int, from, to string) pendingEvent {
	return pendingEvent{kind: EventVersion, data: map[string]any{"step": step, "from": from, "to": to}}
}
