package compact

import (
	"sort"

	"github.com/gbresearch/gb/jobs/llm"
)

// candidate is a message that compaction may replace: a tool result by its
// stub, or one of the agent's own long messages (or a long note) by its
// start.
type candidate struct {
	index int          // of the message in the conversation
	call  llm.ToolCall // the call a result answers
	// result is true for a tool result that a stub replaces, false for a
	// message cut to its start.
	result bool
	// repl replaces the message: the stub with what it keeps of the
	// result, or the message cut to its start.
	repl llm.Message
	// bare is the stub without what it keeps; evidence the tokens that
	// the kept block adds to it (0 when there is none).
	bare     llm.Message
	evidence int
	saving   int // the tokens repl saves
}

// ownHead is the share (1/ownHead) of MaxOwnChars an own message or note
// keeps of its start once cut.
const ownHead = 5

// candidates lists, oldest first, the messages compaction may replace: the
// results of calls that can be made again (stubFor), at least
// cfg.MinStubChars characters long, whose stub is shorter than they are;
// and the agent's own messages, notes and remember results longer than
// cfg.MaxOwnChars.
func candidates(msgs []llm.Message, tokens []int, cfg Config) []candidate {
	task := taskWords(msgs)
	results := map[string]string{}
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = m.Content
		}
	}
	head := cfg.MaxOwnChars / ownHead
	var out []candidate
	add := func(c candidate) {
		if !c.result {
			c.bare = c.repl
		}
		if c.saving = tokens[c.index] - messageTokens(c.repl); c.saving > 0 {
			out = append(out, c)
		}
	}
	calls := map[string]llm.ToolCall{}
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			for _, c := range m.ToolCalls {
				calls[c.ID] = c
			}
			if r, ok := bounded(m, results, cfg.MaxOwnChars, head); ok {
				add(candidate{index: i, repl: r})
			}
		case llm.RoleTool:
			call, ok := calls[m.ToolCallID]
			if !ok || (m.Name != "" && m.Name != call.Name) {
				continue
			}
			if r, ok := boundedResult(m, cfg.MaxOwnChars, head); ok {
				add(candidate{index: i, call: call, repl: r})
				continue
			}
			if c, ok := stubCandidate(i, m, call, task, cfg); ok {
				add(c)
			}
		}
	}
	return out
}

// stubCandidate is the candidate of result m of call at index i: its stub,
// with the headings and passages it keeps unless they would make it no
// shorter than the result; false when the result is short or cannot be had
// again.
func stubCandidate(i int, m llm.Message, call llm.ToolCall, task map[string]bool, cfg Config) (candidate, bool) {
	if len(m.Content) < cfg.MinStubChars {
		return candidate{}, false
	}
	chars := runeCount(m.Content)
	if chars < cfg.MinStubChars {
		return candidate{}, false
	}
	line, ok := stubFor(call, chars)
	if !ok {
		return candidate{}, false
	}
	c := candidate{index: i, call: call, result: true, repl: m, bare: m}
	c.bare.Content = line
	c.repl.Content = line
	if cfg.EvidenceChars > 0 {
		if block := keep(m.Content, task, cfg.EvidenceChars).render("what the service kept of that result"); block != "" {
			c.repl.Content = line + "\n" + block
		}
	}
	whole := messageTokens(m)
	if messageTokens(c.repl) >= whole {
		c.repl = c.bare
	}
	c.evidence = messageTokens(c.repl) - messageTokens(c.bare)
	return c, true
}

// limits are the marks the plan works to, in prompt tokens.
type limits struct {
	high   int // a batch is cleared when the prompt passes it
	low    int // a batch brings the prompt down to it
	budget int // the most the prompt may be
	keep   int // newest results kept whole unless the budget is passed
	// evHigh is the most tokens the stubs' kept passages may take; a
	// batch of the oldest then loses them, down to evLow.
	evHigh, evLow int
}

// cuts are where the plan stands: the first stubbed candidates are
// replaced (stubbed or cut to their start), and the first bare of them
// have lost what their stubs kept too. bare ≤ stubbed.
type cuts struct{ stubbed, bare int }

// plan is how far, oldest first, the request replaces candidates. It
// replays the conversation as it grew: at each point where a model call
// was made (before each assistant message, and at the end), if the prompt
// with the replacements so far is over the high-water mark, the cut moves
// on to the fewest candidates that bring it down to the low-water mark,
// never into the keep newest results unless the prompt would still be
// over the budget, and never past the latest assistant message: the
// results it asked for have not been seen yet. Then, when the passages
// kept by the stubs pass their share, the oldest stubs lose them in a
// batch, down to half their share, and so they do, down to the high-water
// mark, when the prompt would not fit even with the newest results cut to
// their head. The cuts at a point depend only on the messages before it, and
// never move back, so consecutive requests share their replacements, and
// their prefix, until the next batch.
func (l limits) plan(msgs []llm.Message, s sizes, cands []candidate) cuts {
	saved := make([]int, len(cands)+1) // saved[j]: what replacing the first j saves
	ev := make([]int, len(cands)+1)    // ev[j]: what the first j stubs keep
	for i, c := range cands {
		saved[i+1] = saved[i] + c.saving
		ev[i+1] = ev[i] + c.evidence
	}
	var at cuts
	var results []int // the candidates before the point that are results
	seen, visible, lastReply, prompt := 0, 0, -1, s.base
	for b := 0; b <= len(msgs); b++ {
		if b == len(msgs) || msgs[b].Role == llm.RoleAssistant {
			for ; seen < len(cands) && cands[seen].index < b; seen++ {
				if cands[seen].result {
					results = append(results, seen)
				}
			}
			for visible < len(cands) && cands[visible].index < lastReply {
				visible++
			}
			keepFrom := seen
			if len(results) > 0 {
				keepFrom = results[max(len(results)-l.keep, 0)]
			}
			squeeze := 0 // what the results not yet seen would give up cut to their head
			for _, c := range cands[visible:seen] {
				if c.result {
					squeeze += max(s.tokens[c.index]-minHead, 0)
				}
			}
			at = l.advance(at, min(keepFrom, visible), visible, prompt, squeeze, saved, ev)
		}
		if b < len(msgs) {
			prompt += s.tokens[b]
			if msgs[b].Role == llm.RoleAssistant {
				lastReply = b
			}
		}
	}
	return at
}

// advance is the cuts at a point of the replay: at so far, kept the
// candidates that may be replaced without touching the newest results,
// most those that may be replaced at all, prompt the tokens without any
// replacement, squeeze what the results not yet seen would give up if cut
// to their head.
func (l limits) advance(at cuts, kept, most, prompt, squeeze int, saved, ev []int) cuts {
	over := func(c cuts, mark int) bool { return prompt-saved[c.stubbed]-ev[c.bare] > mark }
	if over(at, l.high) {
		at.stubbed = reach(at.stubbed, kept, prompt-ev[at.bare]-l.low, saved)
		if over(at, l.budget) {
			at.stubbed = reach(at.stubbed, most, prompt-ev[at.bare]-l.low, saved)
		}
	}
	// The passages are the evidence: the stubs lose them, oldest first,
	// in a batch down to half their share when they pass it, and only
	// when the prompt would not fit even with the newest results cut to
	// their head (trim) otherwise, down to the high-water mark then.
	need := 0
	if ev[at.stubbed]-ev[at.bare] > l.evHigh {
		need = ev[at.stubbed] - l.evLow
	}
	if over(at, l.budget+squeeze) {
		need = max(need, prompt-squeeze-saved[at.stubbed]-l.high)
	}
	if need > ev[at.bare] {
		at.bare = reach(at.bare, at.stubbed, need, ev)
	}
	return at
}

// reach is the fewest candidates, more than cut and at most most, whose
// prefix sum in sums reaches need; most when none do, and cut when most is
// not more than cut.
func reach(cut, most, need int, sums []int) int {
	if most <= cut {
		return cut
	}
	return cut + 1 + min(sort.SearchInts(sums[cut+1:most+1], need), most-cut-1)
}
