package compact

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/llm"
)

// trim brings res's prompt within budget when the plan did not: it cuts
// the results kept whole, newest first, to their head, with a line that
// says what was cut and how to read on, or stubs one when not even its
// head fits. Then, if the prompt is still over, the stubs lose their
// passages, oldest first; and a result the model has not seen yet (one of
// the latest assistant message's) is stubbed only when nothing else is
// left to take out, as the step could not be made at all otherwise. orig
// is the input conversation, tokens its sizes, cands the candidates, of
// which the plan replaced those before at.
func trim(res *Result, orig []llm.Message, tokens []int, cands []candidate, at cuts, budget int) {
	lastReply := -1
	for i, m := range orig {
		if m.Role == llm.RoleAssistant {
			lastReply = i
		}
	}
	kept := cands[at.stubbed:]
	var unseen []candidate
	for i := len(kept) - 1; i >= 0 && res.Prompt > budget; i-- {
		c := kept[i]
		if !c.result || trimOne(res, orig, tokens, c, budget) {
			continue
		}
		if c.index > lastReply {
			unseen = append(unseen, c)
			continue
		}
		res.stub(c)
	}
	for _, c := range cands[at.bare:at.stubbed] {
		if res.Prompt <= budget {
			return
		}
		if c.result && c.evidence > 0 {
			res.Request.Messages[c.index] = c.bare
			res.Prompt -= c.evidence
			res.Kept--
		}
	}
	for _, c := range unseen {
		if res.Prompt <= budget {
			return
		}
		res.stub(c)
	}
}

// minHead is the fewest tokens a result cut to its head takes when it
// cannot take out all that is over the budget on its own: the results
// before it are cut for the rest.
const minHead = 300

// trimOne cuts the result of c to the head that brings res's prompt
// within budget, or to minHead tokens when that is less than its note
// alone; false when it cannot be cut.
func trimOne(res *Result, orig []llm.Message, tokens []int, c candidate, budget int) bool {
	msgs := res.Request.Messages
	over := res.Prompt - budget
	head, ok := cutToFit(orig[c.index], c.call, max(tokens[c.index]-over, minHead))
	if !ok {
		return false
	}
	msgs[c.index].Content = head
	res.Prompt += messageTokens(msgs[c.index]) - tokens[c.index]
	res.Trimmed++
	return true
}

// stub replaces c's result by its stub without passages.
func (res *Result) stub(c candidate) {
	res.Request.Messages[c.index] = c.bare
	res.Prompt -= c.saving + c.evidence
	res.Stubbed++
}

// cutToFit cuts the content of m, the result of call, to at most target
// tokens for the whole message: a head of the content, a line that says
// what was cut, and the block's closing marker if it had one. False when
// not even the line fits.
func cutToFit(m llm.Message, call llm.ToolCall, target int) (string, bool) {
	content := m.Content
	closing := closingLine(content)
	body := content[:len(content)-len(closing)]
	total := runeCount(content)
	h := len(body)
	for range 8 { // each round shrinks h by what is over; a few suffice
		h = runeStart(body, h)
		note := cutNote(call, content, h, total)
		m.Content = body[:h] + "\n" + note + closing
		over := messageTokens(m) - target
		if over <= 0 {
			return m.Content, true
		}
		if h == 0 {
			return "", false
		}
		// A token is at most four bytes of content.
		h = max(0, h-4*over)
	}
	return "", false
}

// runeStart moves i back to the start of the character it is in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// closingLine is the last line of content, with the newline before it,
// when it closes a delimited block (a web page's "<<<END ...>>>"), so that
// a cut keeps the block closed; "" otherwise.
func closingLine(content string) string {
	nl := strings.LastIndexByte(content, '\n')
	if nl < 0 || !strings.HasPrefix(content[nl+1:], "<<<") {
		return ""
	}
	return content[nl:]
}

// cutNote is the line that ends a result cut after its first shown bytes:
// how much is not shown, and the call that reads on from there.
func cutNote(call llm.ToolCall, content string, shown, total int) string {
	hidden := total - runeCount(content[:shown])
	lead := fmt.Sprintf("[Cut to save space: %s of this result's %s characters are not shown. ", count(hidden), count(total))
	if next, ok := readOn(call, content, shown); ok {
		return lead + fmt.Sprintf("Call %s with %s to read on.]", call.Name, next)
	}
	if call.Name == toolWaitSubagents {
		a, _ := decode[waitArgs](call)
		return lead + readReportHint(a.Names) + ".]"
	}
	return lead + fmt.Sprintf("Call %s with %s to see it again.]", call.Name, argsText(call))
}

// readOn is the arguments of the call that reads on from the shown bytes
// of content, the result of a paged read (fetch, read, read_report); false
// for other tools, or when the result is not laid out as those tools lay
// it out. The text a page holds begins after its header: the
// "[characters ...]" line of fetch and read_report, the blank line after
// read's title.
func readOn(call llm.ToolCall, content string, shown int) (string, bool) {
	var start int
	switch call.Name {
	case toolFetch, toolReadReport:
		i := strings.Index(content, "\n[characters ")
		if i < 0 {
			return "", false
		}
		nl := strings.IndexByte(content[i+1:], '\n')
		if nl < 0 {
			return "", false
		}
		start = i + 1 + nl + 1
	case toolRead:
		i := strings.Index(content, "\n\n")
		if i < 0 {
			return "", false
		}
		start = i + 2
	default:
		return "", false
	}
	read := 0
	if shown > start {
		read = runeCount(content[start:shown])
	}
	switch call.Name {
	case toolFetch:
		a, ok := decode[pageArgs](call)
		a.URL, a.Offset = strings.TrimSpace(a.URL), a.Offset+read
		return jsonText(a), ok && a.URL != ""
	case toolRead:
		a, ok := decode[documentArgs](call)
		a.Offset += read
		return jsonText(a), ok
	default:
		a, ok := decode[reportArgs](call)
		a.Offset += read
		return jsonText(a), ok && a.Name != ""
	}
}
