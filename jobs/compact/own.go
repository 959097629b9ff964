package compact

import (
	"fmt"
	"regexp"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file bounds what the agent wrote itself: its long messages and the
// notes it took (remember), whose text lives in its calls' arguments.
// Once the batch cut passes them they are cut to their start, with a line
// that says how much is not shown and, for a note, which document holds
// it whole.

// toolRemember is the tool that takes a note.
const toolRemember = "remember"

// noteArgs are the arguments of remember, in the order it takes them.
type noteArgs struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// noteDocument finds the document a note was saved as in remember's result.
var noteDocument = regexp.MustCompile(`document (\d+)`)

// bounded is m, an assistant message, with its content and the text of its
// notes cut to head characters when longer than most; false when nothing
// of it is that long. results maps call ids to their results.
func bounded(m llm.Message, results map[string]string, most, head int) (llm.Message, bool) {
	changed, copied := false, false
	if n := runeCount(m.Content); n > most {
		m.Content = headOf(m.Content, head) + "\n" + fmt.Sprintf("[Cut to save space: %s of this message's %s characters are not shown.]",
			count(n-head), count(n))
		changed = true
	}
	for i, c := range m.ToolCalls {
		if c.Name != toolRemember {
			continue
		}
		a, ok := decode[noteArgs](c)
		if n := runeCount(a.Text); ok && n > most {
			where := "the knowledge base keeps it whole"
			if d := noteDocument.FindStringSubmatch(results[c.ID]); d != nil {
				where = fmt.Sprintf(`the whole note is document %s: call read with {"id":%s}`, d[1], d[1])
			}
			a.Text = headOf(a.Text, head) + fmt.Sprintf(" [Cut to save space: %s of this note's %s characters are not shown; %s.]",
				count(n-head), count(n), where)
			if !copied {
				m.ToolCalls, copied = append([]llm.ToolCall(nil), m.ToolCalls...), true
			}
			m.ToolCalls[i] = llm.NewToolCall(c.ID, c.Name, jsonText(a))
			changed = true
		}
	}
	return m, changed
}

// boundedResult is a long result of remember cut to its head.
func boundedResult(m llm.Message, most, head int) (llm.Message, bool) {
	n := runeCount(m.Content)
	if m.Name != toolRemember || n <= most {
		return m, false
	}
	m.Content = headOf(m.Content, head) + "\n" + fmt.Sprintf("[Cut to save space: %s of this result's %s characters are not shown.]",
		count(n-head), count(n))
	return m, true
}

// headOf is the first n characters of s.
func headOf(s string, n int) string {
	r := []rune(s)
	return string(r[:min(n, len(r))])
}
