package compact

import (
	"sort"

	"github.com/gbresearch/gb/jobs/llm"
)

// candidate is a tool result that a stub may replace.
type candidate struct {
	index  int          // of the tool message in the conversation
	call   llm.ToolCall // the call it answers
	stub   string       // what replaces it
	saving int          // the tokens the stub saves
}

// candidates lists, oldest first, the tool results a stub may replace: the
// results of calls that can be made again (stubFor), at least minChars
// characters long, whose stub is shorter than they are.
func candidates(msgs []llm.Message, tokens []int, minChars int) []candidate {
	var out []candidate
	calls := map[string]llm.ToolCall{}
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			for _, c := range m.ToolCalls {
				calls[c.ID] = c
			}
		case llm.RoleTool:
			call, ok := calls[m.ToolCallID]
			if !ok || (m.Name != "" && m.Name != call.Name) || len(m.Content) < minChars {
				continue
			}
			chars := runeCount(m.Content)
			if chars < minChars {
				continue
			}
			text, ok := stubFor(call, chars)
			if !ok {
				continue
			}
			stub := m
			stub.Content = text
			if saving := tokens[i] - messageTokens(stub); saving > 0 {
				out = append(out, candidate{index: i, call: call, stub: text, saving: saving})
			}
		}
	}
	return out
}

// limits are the marks the plan works to, in prompt tokens.
type limits struct {
	high   int // a batch is cleared when the prompt passes it
	low    int // a batch brings the prompt down to it
	budget int // the most the prompt may be
	keep   int // newest candidates kept whole unless the budget is passed
}

// plan is how many candidates, oldest first, the request stubs. It replays
// the conversation as it grew: at each point where a model call was made
// (before each assistant message, and at the end), if the prompt with the
// stubs so far is over the high-water mark, the cut moves on to the fewest
// candidates that bring it down to the low-water mark, never into the keep
// newest unless the prompt would still be over the budget. The cut at a
// point depends only on the messages before it, so consecutive requests
// share their stubs, and their prefix, until the next batch.
func (l limits) plan(msgs []llm.Message, s sizes, cands []candidate) int {
	saved := make([]int, len(cands)+1) // saved[j]: what stubbing the first j saves
	for i, c := range cands {
		saved[i+1] = saved[i] + c.saving
	}
	cut, seen, prompt := 0, 0, s.base
	for b := 0; b <= len(msgs); b++ {
		if b == len(msgs) || msgs[b].Role == llm.RoleAssistant {
			for seen < len(cands) && cands[seen].index < b {
				seen++
			}
			cut = l.advance(cut, seen, prompt, saved)
		}
		if b < len(msgs) {
			prompt += s.tokens[b]
		}
	}
	return cut
}

// advance is the cut at a point of the replay: cut stubs so far, seen
// candidates in the history, prompt tokens without any stub.
func (l limits) advance(cut, seen, prompt int, saved []int) int {
	if prompt-saved[cut] <= l.high {
		return cut
	}
	cut = l.reach(cut, seen-l.keep, prompt, saved)
	if prompt-saved[cut] > l.budget {
		cut = l.reach(cut, seen-1, prompt, saved)
	}
	return cut
}

// reach is the fewest candidates, more than cut and at most most, whose
// stubs bring prompt to the low-water mark; most when none do, and cut
// when most is not more than cut.
func (l limits) reach(cut, most, prompt int, saved []int) int {
	if most <= cut {
		return cut
	}
	need := prompt - l.low
	return cut + 1 + min(sort.SearchInts(saved[cut+1:most+1], need), most-cut-1)
}
