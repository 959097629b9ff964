package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/cite"
	"github.com/gbresearch/gb/jobs/llm"
)

// This file checks a report's citations (package cite) in the transaction
// that records it: against what every agent of the tree read (the pages
// it fetched, the knowledge-base documents it read) and was only shown
// (search results), it records a verdict for each claim and source, puts
// the counts on the run, and, as the research's citations mode says,
// leaves the report as it is (off: not checked), marks the claims without
// support in it (flag), or gives the root one more step to fix or remove
// them (revise), then checks again.

// Citations modes: what a research does with its report's citations.
const (
	// CitationsOff checks nothing.
	CitationsOff = "off"
	// CitationsFlag checks the report and marks its claims without
	// support ("⚠ unsupported", "⚠ unread") in it.
	CitationsFlag = "flag"
	// CitationsRevise checks the report and gives the root one more step
	// to fix or remove its claims without support, then checks again and
	// flags what is left.
	CitationsRevise = "revise"
)

// CitationsModes are the modes a research may ask for.
var CitationsModes = []string{CitationsOff, CitationsFlag, CitationsRevise}

// checkCitationsMode checks a mode a request asked for ("" is the default).
func checkCitationsMode(field, mode string) error {
	switch mode {
	case "", CitationsOff, CitationsFlag, CitationsRevise:
		return nil
	}
	return &FieldError{field, fmt.Sprintf("must be off, flag or revise (got %q); leave it out for the default", mode)}
}

// citationsModeFor is the mode of a new research: the one it asked for,
// else the configured default, else revise for a language model and flag
// for the offline policy, whose extractive reports cannot be rewritten.
func (a *Service) citationsModeFor(asked string) string {
	if asked != "" {
		return asked
	}
	if a.config.Citations != "" {
		return a.config.Citations
	}
	if isOffline(a.model) {
		return CitationsFlag
	}
	return CitationsRevise
}

// citeOutcome is what the check of a report decided.
type citeOutcome struct {
	report string // the report to record: flagged, or as written
	revise bool   // the root gets one more step to revise it instead
}

// citeReport checks the report a run is about to end with, in the
// transaction that records it, with the tree locked. It records the
// verdicts and the counts, and says what to record as the report, or
// that the root revises it first (the revision note is then appended to
// the step that wrote it, so that the next step sees it).
func (a *Service) citeReport(ctx context.Context, tx pgx.Tx, run *Run, step int, report string, end *ending) (citeOutcome, error) {
	mode, err := treeCitationsMode(ctx, tx, run)
	if err != nil || mode == CitationsOff || strings.TrimSpace(report) == "" {
		return citeOutcome{report: report}, err
	}
	docs, err := end.documents(ctx, tx, run.RootID)
	if err != nil {
		return citeOutcome{}, err
	}
	res := cite.Check(report, docs)
	judgedBy := applyJudgements(res, a.takeJudgements(run.ID, step))
	round := 0
	if run.CitationsBefore != nil {
		round = 1
	}
	var note, skipped string
	if mode == CitationsRevise && run.IsRoot() && round == 0 && needsRevision(res) {
		// The revision reads what the step's record writes.
		if err := end.flush(ctx, tx); err != nil {
			return citeOutcome{}, err
		}
		if note, skipped, err = a.planRevision(ctx, tx, run, res); err != nil {
			return citeOutcome{}, err
		}
	}
	revise := note != "" && skipped == ""
	// The verdicts go with the run's end, or now when the run goes on.
	if err := saveCitations(ctx, tx, run, round, res, revise, judgedBy, end); err != nil {
		return citeOutcome{}, err
	}
	if skipped != "" {
		// Its event comes after the step's own.
		if err := end.flush(ctx, tx); err != nil {
			return citeOutcome{}, err
		}
		if err := recordRevisionSkipped(ctx, tx, run, step, skipped); err != nil {
			return citeOutcome{}, err
		}
	}
	if revise {
		note, err := json.Marshal([]llm.Message{{Role: llm.RoleUser, Content: note}})
		if err != nil {
			return citeOutcome{}, fmt.Errorf("error encoding the revision note: %w", err)
		}
		// Append the note to the step's messages: the root's next step reads it.
		if _, err := tx.Exec(ctx, `UPDATE gb_agent_research_steps SET messages = messages || $3::jsonb
			WHERE run_id = $1 AND step = $2`, run.ID, step, string(note)); err != nil {
			return citeOutcome{}, fmt.Errorf("error adding the revision note to step %d of run %d: %w", step, run.ID, err)
		}
		return citeOutcome{revise: true}, nil
	}
	if run.IsRoot() {
		report = cite.Flag(report, res)
	}
	return citeOutcome{report: report}, nil
}

// treeCitationsMode is the citations mode of a run's research (its root's).
func treeCitationsMode(ctx context.Context, db DB, run *Run) (string, error) {
	if run.IsRoot() {
		return run.CitationsMode, nil
	}
	var mode string
	if err := db.QueryRow(ctx, `SELECT citations_mode FROM gb_agent_research_runs WHERE id = $1`, run.RootID).
		Scan(&mode); err != nil {
		return "", fmt.Errorf("error reading the citations mode of run %d: %w", run.RootID, err)
	}
	return mode, nil
}

// saveCitations records the verdicts of one round and the run's counts;
// with revise, the counts are those before the revision.
func saveCitations(ctx context.Context, tx pgx.Tx, run *Run, round int, res *cite.Result, revise bool,
	judgedBy map[[2]int]string, end *ending) error {
	rows := citationRows(res)
	for i, r := range rows {
		if by, ok := judgedBy[[2]int{r.Claim, r.Marker}]; ok {
			rows[i].JudgedBy = by
		}
	}
	b := end.batch()
	// A round's verdicts replace those of that round and of any later one.
	b.Queue(`DELETE FROM gb_citations WHERE run_id = $1 AND round >= $2`, run.ID, round)
	for _, r := range rows {
		// A verdict per claim and citation marker.
		b.Queue(`INSERT INTO gb_citations (run_id, round, claim_index, claim, marker, ref, verdict, claim_verdict,
				passage, score, reason, judged_by, page, passage_page)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			run.ID, round, r.Claim, llm.CleanText(r.Text), r.Marker, llm.CleanText(r.Ref), r.Verdict, r.ClaimVerdict,
			llm.CleanText(r.Passage), r.Score, r.Reason, r.JudgedBy, r.Page, r.PassagePage)
	}
	counts := res.Counts
	if revise {
		// The counts before the revision; the revised report's come with its own check.
		b.Queue(`UPDATE gb_agent_research_runs SET citations_before = $2, citations = NULL WHERE id = $1`, run.ID, counts)
		run.CitationsBefore = &counts
	} else {
		// The counts of the checked report.
		b.Queue(`UPDATE gb_agent_research_runs SET citations = $2 WHERE id = $1`, run.ID, counts)
		run.Citations = &counts
	}
	if end != nil && !revise {
		return nil // sent with the run's end
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("error recording the citations of run %d: %w", run.ID, err)
	}
	end.sent()
	return nil
}

// Citation is the verdict on one claim citing one source, or on an
// uncited claim (Marker 0).
type Citation struct {
	Claim        int          `json:"claim"`
	Text         string       `json:"text"`
	Marker       int          `json:"marker"`
	Ref          string       `json:"ref"`
	Verdict      cite.Verdict `json:"verdict"`
	ClaimVerdict cite.Verdict `json:"claim_verdict"`
	Passage      string       `json:"passage"`
	Score        float64      `json:"score"`
	Reason       string       `json:"reason"`
	JudgedBy     string       `json:"judged_by"`
	// Page is the page of the source the claim cites ("[3, p. 7]"), 0
	// when it names none; PassagePage the page (slide, sheet) the passage
	// is on, as "p. 7", when the source has pages.
	Page        int    `json:"page,omitempty"`
	PassagePage string `json:"passage_page,omitempty"`
}

// judgedLexical is the judge of a verdict the lexical test gave.
const judgedLexical = "lexical"

// citationRows are the rows of a check: each pair, and each uncited claim.
func citationRows(res *cite.Result) []Citation {
	var out []Citation
	pairs := map[int][]cite.Pair{}
	for _, p := range res.Pairs {
		pairs[p.Claim] = append(pairs[p.Claim], p)
	}
	for _, c := range res.Claims {
		if c.Verdict == cite.Uncited {
			out = append(out, Citation{Claim: c.Index, Text: c.Text, Verdict: cite.Uncited, ClaimVerdict: cite.Uncited,
				JudgedBy: judgedLexical})
			continue
		}
		seen := map[int]bool{}
		for _, p := range pairs[c.Index] {
			if seen[p.Marker] {
				continue
			}
			seen[p.Marker] = true
			out = append(out, Citation{Claim: c.Index, Text: c.Text, Marker: p.Marker, Ref: p.Ref, Verdict: p.Verdict,
				ClaimVerdict: c.Verdict, Passage: p.Passage, Score: p.Score, Reason: p.Reason, JudgedBy: judgedLexical,
				Page: p.Page, PassagePage: p.PassagePage})
		}
	}
	return out
}

// clipRunes cuts s to at most n characters.
func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// revising reports whether a run's next step is the revision of its
// report: its conversation ends with the revision note.
func revising(history []llm.Message) bool {
	n := len(history)
	return n > 0 && history[n-1].Role == llm.RoleUser && strings.HasPrefix(history[n-1].Content, reviseNotePrefix)
}

// keepDraft is what a root that was revising its report ends with when
// the revision cannot be made (its budget, a failed call, a reply with no
// report): the report it wrote before, flagged, so that the research
// still ends with it. ok is false for any other run.
func (a *Service) keepDraft(ctx context.Context, tx pgx.Tx, run *Run, why string) (report string, ok bool, err error) {
	if !run.IsRoot() || run.CitationsBefore == nil || run.Citations != nil {
		return "", false, nil
	}
	var draft string
	err = tx.QueryRow(ctx, `SELECT m->>'content' FROM gb_agent_research_steps s
			CROSS JOIN LATERAL jsonb_array_elements(s.messages) WITH ORDINALITY AS e(m, i)
		WHERE s.run_id = $1 AND m->>'role' = 'assistant' AND coalesce(m->>'content', '') <> ''
		  AND m->'tool_calls' IS NULL
		ORDER BY s.step DESC, e.i DESC LIMIT 1`, run.ID).Scan(&draft)
	if err == pgx.ErrNoRows {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("error reading the draft report of run %d: %w", run.ID, err)
	}
	docs, err := treeDocuments(ctx, tx, run.RootID)
	if err != nil {
		return "", false, err
	}
	res := cite.Check(draft, docs)
	if err := saveCitations(ctx, tx, run, 1, res, false, nil, nil); err != nil {
		return "", false, err
	}
	if err := recordRevisionSkipped(ctx, tx, run, run.Steps, "the revision could not be made: "+why); err != nil {
		return "", false, err
	}
	return cite.Flag(draft, res), true, nil
}

// RunCitations are the verdicts of the last check of a run's report.
type RunCitations struct {
	RunID int64  `json:"run_id"`
	Mode  string `json:"mode"`
	// Round is 0 for the first check, 1 for the check of a revised report.
	Round        int          `json:"round"`
	Counts       *cite.Counts `json:"counts"`
	CountsBefore *cite.Counts `json:"counts_before,omitempty"`
	// RevisionSkipped says why a report that needed a revision was kept
	// as written (flagged): the revision could not run or be made.
	RevisionSkipped string `json:"revision_skipped,omitempty"`
	// Citations are the claim–source pairs and the uncited claims, in the
	// report's order.
	Citations []Citation `json:"citations"`
}

// CitationsOf reads the verdicts of the last check of a run's report
// (none before a check).
func CitationsOf(ctx context.Context, db DB, run *Run) (*RunCitations, error) {
	mode, err := treeCitationsMode(ctx, db, run)
	if err != nil {
		return nil, err
	}
	out := &RunCitations{RunID: run.ID, Mode: mode, Counts: run.Citations, CountsBefore: run.CitationsBefore,
		Citations: []Citation{}}
	rows, err := db.Query(ctx, `SELECT round, claim_index, claim, marker, ref, verdict, claim_verdict, passage,
			score::float8, reason, judged_by, page, passage_page
		FROM gb_citations WHERE run_id = $1
		  AND round = (SELECT max(round) FROM gb_citations WHERE run_id = $1)
		ORDER BY claim_index, marker`, run.ID)
	if err != nil {
		return nil, fmt.Errorf("error reading the citations of run %d: %w", run.ID, err)
	}
	out.Citations, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Citation, error) {
		var c Citation
		err := r.Scan(&out.Round, &c.Claim, &c.Text, &c.Marker, &c.Ref, &c.Verdict, &c.ClaimVerdict, &c.Passage,
			&c.Score, &c.Reason, &c.JudgedBy, &c.Page, &c.PassagePage)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading the citations of run %d: %w", run.ID, err)
	}
	if out.Citations == nil {
		out.Citations = []Citation{}
	}
	if out.RevisionSkipped, err = revisionSkippedOf(ctx, db, run); err != nil {
		return nil, err
	}
	return out, nil
}
