package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/cite"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// This file is the revision of a root's report (citations mode revise):
// which reports go back (needsRevision), the note that sends one back
// (reviseNote: the worst claims first, bounded in count and characters,
// asking to correct, soften, cite the right source or remove, and for a
// Sources list in the one form the check reads when it read none), and
// whether the revision can run at all (planRevision: a step left, and its
// call within the model's window and what is left of the budget). A
// revision that cannot run, or that runs and cannot be made, is recorded:
// an event (EventRevisionSkipped) whose reason the run's citations show.

// EventRevisionSkipped: a root's report needed a revision that could not
// run or could not be made (data "reason"); the report was kept as
// written, flagged.
const EventRevisionSkipped = "revision_skipped"

// Bounds of the revision note.
const (
	// reviseMaxClaims is how many claims the note names at most.
	reviseMaxClaims = 12
	// reviseMaxChars bounds the claims' lines of the note, in characters.
	reviseMaxChars = 5000
	// reviseClaimChars and revisePassageChars bound a claim and its passage
	// in the note.
	reviseClaimChars   = 400
	revisePassageChars = 240
)

// reviseNotePrefix starts what a root is told when its report goes back
// to it for revision (the first line of prompts.Revise).
const reviseNotePrefix = "The citation check of your report found claims that what this research read does not support."

// revisable are the verdicts the revision asks about, worst first.
var revisable = []cite.Verdict{cite.Contradicted, cite.Unsupported, cite.Unread}

// needsRevision reports whether a checked report goes back to its writer:
// a claim the judge, or the lexical check, found contradicted, unsupported
// or citing a source never read, or a Sources list that could not be read.
func needsRevision(res *cite.Result) bool {
	return res.SourcesUnparsed || slices.ContainsFunc(res.Claims, func(c cite.Claim) bool {
		return slices.Contains(revisable, c.Verdict)
	})
}

// reviseNote tells the root which claims lack support, worst first, within
// reviseMaxClaims claims and reviseMaxChars characters, and what to do.
func reviseNote(set *prompts.Set, res *cite.Result) (string, error) {
	byClaim := map[int][]cite.Pair{}
	for _, p := range res.Pairs {
		byClaim[p.Claim] = append(byClaim[p.Claim], p)
	}
	d := prompts.ReviseData{SourcesUnparsed: res.SourcesUnparsed}
	chars, found := 0, 0
	for _, v := range revisable {
		for _, c := range res.Claims {
			if c.Verdict != v {
				continue
			}
			found++
			line := reviseLine(c, byClaim[c.Index])
			if len(d.Claims) == reviseMaxClaims || chars+len(line) > reviseMaxChars {
				continue
			}
			d.Claims, chars = append(d.Claims, line), chars+len(line)
		}
	}
	d.More = found - len(d.Claims)
	return set.Revise(d)
}

// reviseLine is one claim of the revision note: the claim, its verdict,
// and for each source it cites why, with the closest passage.
func reviseLine(c cite.Claim, pairs []cite.Pair) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- %q (%s)", clipRunes(c.Text, reviseClaimChars), c.Verdict)
	for _, p := range pairs {
		fmt.Fprintf(&b, "\n  [%d] %s: %s", p.Marker, p.Ref, p.Reason)
		if p.Passage != "" && p.Verdict != cite.Supported {
			fmt.Fprintf(&b, "; closest passage: %q", clipRunes(p.Passage, revisePassageChars))
		}
	}
	return b.String()
}

// planRevision decides, in the transaction that records the report, with
// the tree locked, whether its revision can run: the note, or why not.
func (a *Service) planRevision(ctx context.Context, tx pgx.Tx, run *Run, res *cite.Result) (note, skipped string, err error) {
	if run.Steps >= run.MaxSteps {
		return "", fmt.Sprintf("no steps left (%d of %d used)", run.Steps, run.MaxSteps), nil
	}
	note, err = reviseNote(a.pinOf(run).content.Prompts, res)
	if err != nil {
		return "", "", err
	}
	why, err := a.revisionFits(ctx, tx, run, note)
	return note, why, err
}

// revisionFits says why the revision's call, the run's conversation and
// the note with the report's cap, cannot be made: it does not fit the
// model's window even compacted, or what is left of the tree's budget
// (with the share kept for the root's report); "" when it fits.
func (a *Service) revisionFits(ctx context.Context, tx pgx.Tx, run *Run, note string) (string, error) {
	var conv []llm.Message
	rows, err := tx.Query(ctx, conversationSQL, run.ID)
	if err != nil {
		return "", fmt.Errorf("error reading the conversation of run %d: %w", run.ID, err)
	}
	steps, err := pgx.CollectRows(rows, pgx.RowTo[[]llm.Message])
	if err != nil {
		return "", fmt.Errorf("error reading the conversation of run %d: %w", run.ID, err)
	}
	for _, s := range steps {
		conv = append(conv, s...)
	}
	req, err := a.request(run, append(conv, llm.Message{Role: llm.RoleUser, Content: note}), true, false)
	if err != nil {
		return "", err
	}
	p := a.profileFor(run)
	req.MaxCompletionTokens = completionCap(p, true, 0, a.maxCompletionFor(run), p.ContextWindow, 0)
	req, fits, _ := a.compact(run, req, p.ContextWindow, 0, maxCompactLevel, 1)
	if !fits {
		return "its note and the conversation do not fit the model's context window, even compacted", nil
	}
	b, err := lockBudget(ctx, tx, run.RootID)
	if err != nil {
		return "", err
	}
	if v, why := a.fit(run, b, &req, true); v == exhausted {
		return fmt.Sprintf("its call (about %d prompt tokens) does not fit what is left of the budget (%s)",
			llm.EstimatePromptTokens(req), why), nil
	}
	return "", nil
}

// recordRevisionSkipped records why a root's report was not revised.
func recordRevisionSkipped(ctx context.Context, tx pgx.Tx, run *Run, step int, why string) error {
	return addEvent(ctx, tx, run, EventRevisionSkipped, map[string]any{"step": step, "reason": why})
}

// revisionSkippedOf is why a run's report was not revised, from its latest
// EventRevisionSkipped; "" when it was revised or needed no revision.
func revisionSkippedOf(ctx context.Context, db DB, run *Run) (string, error) {
	var why string
	// By the tree, so that the lookup uses gb_events_root_idx.
	err := db.QueryRow(ctx, `SELECT coalesce(data->>'reason', '') FROM gb_agent_research_events
		WHERE root_id = $1 AND run_id = $2 AND kind = $3 ORDER BY seq DESC LIMIT 1`,
		run.RootID, run.ID, EventRevisionSkipped).Scan(&why)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("error reading why run %d was not revised: %w", run.ID, err)
	}
	return why, nil
}
