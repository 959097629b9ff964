package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gbresearch/gb/jobs/cite"
	"github.com/gbresearch/gb/jobs/llm"
	"github.com/gbresearch/gb/jobs/prompts"
)

// This file is the citation check's judge. When the research has a
// language model (Config.VerifyModel, else the run's own model; never the
// offline policy) and Config.JudgeOff is not set, every cited claim of a
// report whose sources were read is judged by that model: in batched
// calls (judgeChunks: at most judgeMaxClaims claims and judgeMaxChars
// characters of claims and passages a call, judgeMaxCalls calls a
// report), each claim with its best passages from each source it cites
// (cite.Pair.Passages). The answer is one JSON object, a verdict
// (supported, partly, unsupported, contradicted) and a reason per claim
// (parseJudgeAnswer). The calls are made after the step's model call and
// before its transaction, like any slow I/O, each admitted against the
// tree's budget and the model's rate limit and kept in the ledger like
// any call. A call the budget or the rate limit does not admit now, that
// fails, or whose answer is malformed leaves its claims (and, but for a
// malformed answer, the later chunks') with the lexical verdicts. The
// judge's verdict stands over the lexical one (applyJudgements). The
// verdicts reach the step's transaction through the agent (judgements),
// in the same process; a step retried elsewhere checks without them.

// Bounds of the judge.
const (
	// judgeMaxClaims is how many claims one call judges at most.
	judgeMaxClaims = 40
	// judgeMaxChars bounds the claims and passages of one call, in characters.
	judgeMaxChars = 24000
	// judgeMaxCalls is how many calls judge one report at most; claims
	// past them keep their lexical verdicts.
	judgeMaxCalls = 4
	// judgeMaxSources, judgeMaxPassages and judgePassageChars bound what a
	// claim brings: sources, passages of each, characters of each.
	judgeMaxSources   = 4
	judgeMaxPassages  = 3
	judgePassageChars = 800
	// judgeTokensPerClaim and judgeTokensBase make a call's completion
	// cap: room for each verdict's JSON and its short reason.
	judgeTokensPerClaim = 60
	judgeTokensBase     = 64
	// judgeReasonChars bounds a reason kept from an answer.
	judgeReasonChars = 300
	// judgeTimeout bounds one judge's call.
	judgeTimeout = 90 * time.Second
)

// judgeSource is one source a judged claim cites and its best passages.
type judgeSource struct {
	marker   int
	ref      string
	passages []string
}

// judgeItem is one claim put to the judge; id is its number in its call.
type judgeItem struct {
	id      int
	claim   string // as written, markers included: the judgement's key
	sources []judgeSource
	chars   int // what it adds to a call
}

// judgement is the judge's verdict on a claim, why, and who gave it.
type judgement struct {
	verdict cite.Verdict
	reason  string
	by      string
}

// stepKey names the judgements of one step of a run.
type stepKey struct {
	run  int64
	step int
}

// isOffline reports whether a model is the offline policy, which is no
// language model.
func isOffline(m llm.Model) bool { return strings.HasPrefix(m.Name(), "offline") }

// judgeFor is the model that judges the citations of a run's reports: the
// verification model when one is set, else the run's own model; nil when
// the judge is off, the model is the offline policy, or the verification
// model is not one this agent may call.
func (a *Service) judgeFor(run *Run) llm.Model {
	if a.config.JudgeOff {
		return nil
	}
	if name := a.config.VerifyModel; name != "" {
		m := a.modelNamed(name)
		if a.model.Name() == name {
			m = a.model
		}
		if m == nil || isOffline(m) {
			return nil
		}
		return m
	}
	if m := a.modelFor(run); !isOffline(m) {
		return m
	}
	return nil
}

// judgeReport judges the cited claims of the report a step's reply is
// about to record, when the run has a judge and the research checks its
// citations; the judgements wait in the agent for the step's transaction
// (takeJudgements).
func (a *Service) judgeReport(ctx context.Context, t *turn, step int, report string) error {
	judge := a.judgeFor(t.run)
	if judge == nil || strings.TrimSpace(report) == "" || !strings.Contains(report, "[") {
		// A report with no marker ([n]) cites nothing the judge could
		// weigh: the tree's sources are not read for it.
		return nil
	}
	mode, err := treeCitationsMode(ctx, a.pool, t.run)
	if err != nil || mode == CitationsOff {
		return err
	}
	docs, err := treeDocuments(ctx, a.pool, t.run.RootID)
	if err != nil {
		return err
	}
	chunks := judgeChunks(judgeItems(cite.Check(report, docs)))
	// A turn whose run is on the judge's model: the ledger row, the rate
	// limit and the estimate are the judge's.
	vr := *t.run
	vr.Model = judge.Name()
	vt := *t
	vt.run = &vr
	out := map[string]judgement{}
	for _, chunk := range chunks {
		got, ok, err := a.judgeChunk(ctx, &vt, step, judge, chunk)
		if err != nil {
			return err
		}
		if !ok {
			break // the budget or the rate limit: the rest keep their lexical verdicts
		}
		for k, v := range got {
			out[k] = v
		}
	}
	if len(out) > 0 {
		a.judgements.Store(stepKey{t.run.ID, step}, out)
	}
	return nil
}

// pairPassages are the passages of a pair for a judge: its best ones, or
// the one the lexical test chose.
func pairPassages(p cite.Pair) []string {
	if len(p.Passages) > 0 {
		return p.Passages
	}
	if p.Passage != "" {
		return []string{p.Passage}
	}
	return nil
}

// judged reports whether the judge is asked about a claim of this verdict:
// a cited claim, neither the writer's inference nor a claim of absence
// (counted apart) nor one of a report whose sources could not be parsed.
func judged(v cite.Verdict) bool {
	switch v {
	case cite.Uncited, cite.NoSources, cite.Inference, cite.Absence:
		return false
	}
	return true
}

// judgeItems are the claims of a check the judge is asked about, in the
// report's order: each judged claim with a read source, and its passages.
func judgeItems(res *cite.Result) []judgeItem {
	byClaim := map[int][]cite.Pair{}
	for _, p := range res.Pairs {
		byClaim[p.Claim] = append(byClaim[p.Claim], p)
	}
	var items []judgeItem
	for _, c := range res.Claims {
		if !judged(c.Verdict) {
			continue
		}
		it := judgeItem{claim: c.Text, chars: len(c.Text)}
		for _, p := range byClaim[c.Index] {
			ps := pairPassages(p)
			if len(ps) == 0 || len(it.sources) == judgeMaxSources {
				continue
			}
			s := judgeSource{marker: p.Marker, ref: p.Ref}
			for _, x := range ps[:min(len(ps), judgeMaxPassages)] {
				x = clipRunes(x, judgePassageChars)
				s.passages = append(s.passages, x)
				it.chars += len(x)
			}
			it.sources = append(it.sources, s)
		}
		if len(it.sources) > 0 {
			items = append(items, it)
		}
	}
	return items
}

// judgeChunks splits the judged claims into calls, each of at most
// judgeMaxClaims claims and judgeMaxChars characters (a claim larger
// than that alone is a call of its own), and at most judgeMaxCalls calls.
// A claim's id is its place in its call, from 1.
func judgeChunks(items []judgeItem) [][]judgeItem {
	var out [][]judgeItem
	var cur []judgeItem
	chars := 0
	for _, it := range items {
		if len(cur) > 0 && (len(cur) == judgeMaxClaims || chars+it.chars > judgeMaxChars) {
			out, cur, chars = append(out, cur), nil, 0
		}
		if len(out) == judgeMaxCalls {
			return out
		}
		it.id = len(cur) + 1
		cur, chars = append(cur, it), chars+it.chars
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// judgeRequest is the call that judges one chunk.
func judgeRequest(chunk []judgeItem) llm.Request {
	var b strings.Builder
	for _, it := range chunk {
		fmt.Fprintf(&b, "Claim %d: %s\n", it.id, cite.StripMarkers(it.claim))
		for _, s := range it.sources {
			label := fmt.Sprintf("passages of source [%d] %s cited by claim %d", s.marker, s.ref, it.id)
			b.WriteString(untrusted(label, strings.Join(s.passages, "\n…\n")) + "\n")
		}
		b.WriteString("\n")
	}
	return llm.Request{System: prompts.Judge, MaxCompletionTokens: judgeTokensBase + judgeTokensPerClaim*len(chunk),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.TrimSpace(b.String())}}}
}

// judgeChunk makes one judge's call. ok is false when the call was not
// admitted now; the judgements are keyed by claim text, none when the
// call failed or its answer was malformed.
func (a *Service) judgeChunk(ctx context.Context, vt *turn, step int, judge llm.Model, chunk []judgeItem) (js map[string]judgement, ok bool, err error) {
	req := judgeRequest(chunk)
	ad, err := a.admit(ctx, vt, step, &req, false)
	if err != nil {
		return nil, false, err
	}
	if ad.verdict != admitted {
		if ad.call.id != 0 {
			err = settleCall(ctx, a.pool, ad.call, llm.Usage{}, false, false, outcomeNotSent)
		}
		return nil, false, err
	}
	req.ID = fmt.Sprintf("gb-call-%d", ad.call.id)
	cctx, cancel := context.WithTimeout(ctx, judgeTimeout)
	defer cancel()
	resp, callErr := judge.Complete(cctx, req)
	if callErr != nil {
		var ce *llm.CallError
		billed := errors.As(callErr, &ce) && ce.Usage != (llm.Usage{})
		u := llm.Usage{}
		if billed {
			u = ce.Usage
		}
		if err := settleCall(context.WithoutCancel(ctx), a.pool, ad.call, u, billed, false, outcomeFailed); err != nil {
			return nil, false, err
		}
		return nil, true, nil // these claims keep their lexical verdicts
	}
	if err := settleCall(context.WithoutCancel(ctx), a.pool, ad.call, resp.Usage, true, false, outcomeAnswered); err != nil {
		return nil, false, err
	}
	byID, perr := parseJudgeAnswer(resp.Message.Content, len(chunk))
	if perr != nil {
		a.logger.WarnContext(ctx, "the citation judge's answer was malformed; its claims keep their lexical verdicts",
			"run_id", vt.run.ID, "step", step, "model", judge.Name(), "err", perr)
		return nil, true, nil
	}
	js = map[string]judgement{}
	for _, it := range chunk {
		if j, ok := byID[it.id]; ok {
			j.by = judge.Name()
			js[it.claim] = j
		}
	}
	return js, true, nil
}

// judgeVerdicts maps the judge's words to verdicts.
var judgeVerdicts = map[string]cite.Verdict{
	"supported":    cite.Supported,
	"partly":       cite.Weak,
	"partially":    cite.Weak,
	"unsupported":  cite.Unsupported,
	"contradicted": cite.Contradicted,
}

// parseJudgeAnswer reads a judge's answer for claims 1 to n: one JSON
// object {"verdicts": [{"id", "verdict", "reason"}]}, tolerating a code
// fence or words around it. An answer that is not such an object, or
// with an entry whose id is not asked or given twice, or whose verdict
// is not one of the four, is malformed and rejected whole; a claim it
// leaves out keeps its lexical verdict.
func parseJudgeAnswer(answer string, n int) (map[int]judgement, error) {
	i, j := strings.IndexByte(answer, '{'), strings.LastIndexByte(answer, '}')
	if i < 0 || j < i {
		return nil, errors.New("no JSON object in the answer")
	}
	var a struct {
		Verdicts []struct {
			ID      *int   `json:"id"`
			Verdict string `json:"verdict"`
			Reason  string `json:"reason"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(answer[i:j+1]), &a); err != nil {
		return nil, fmt.Errorf("the answer is not the JSON asked for: %w", err)
	}
	if len(a.Verdicts) == 0 {
		return nil, errors.New("the answer has no verdicts")
	}
	out := map[int]judgement{}
	for _, v := range a.Verdicts {
		if v.ID == nil || *v.ID < 1 || *v.ID > n {
			return nil, fmt.Errorf("a verdict's id is missing or not a claim asked about (1 to %d)", n)
		}
		if _, dup := out[*v.ID]; dup {
			return nil, fmt.Errorf("claim %d is judged twice", *v.ID)
		}
		verdict, ok := judgeVerdicts[strings.ToLower(strings.TrimSpace(v.Verdict))]
		if !ok {
			return nil, fmt.Errorf("claim %d: %q is not supported, partly, unsupported or contradicted", *v.ID, v.Verdict)
		}
		out[*v.ID] = judgement{verdict: verdict, reason: clipRunes(strings.TrimSpace(llm.CleanText(v.Reason)), judgeReasonChars)}
	}
	return out, nil
}

// takeJudgements returns and forgets the judgements made for a step.
func (a *Service) takeJudgements(runID int64, step int) map[string]judgement {
	v, ok := a.judgements.LoadAndDelete(stepKey{runID, step})
	if !ok {
		return nil
	}
	return v.(map[string]judgement)
}

// applyJudgements gives each judged claim's pairs with a passage the
// judge's verdict, which stands over the lexical one, and recounts; it
// returns who judged each pair it changed, by claim index and marker.
func applyJudgements(res *cite.Result, js map[string]judgement) map[[2]int]string {
	if len(js) == 0 {
		return nil
	}
	texts := map[int]string{}
	for _, c := range res.Claims {
		if judged(c.Verdict) {
			texts[c.Index] = c.Text
		}
	}
	by := map[[2]int]string{}
	for i, p := range res.Pairs {
		text, ok := texts[p.Claim]
		if !ok || len(pairPassages(p)) == 0 {
			continue
		}
		j, ok := js[text]
		if !ok {
			continue
		}
		res.Pairs[i].Verdict = j.verdict
		res.Pairs[i].Reason = "judged " + string(j.verdict) + " by " + j.by
		if j.reason != "" {
			res.Pairs[i].Reason += ": " + j.reason
		}
		by[[2]int{p.Claim, p.Marker}] = j.by
	}
	res.Recount()
	return by
}
