package openaifake

import (
	"encoding/json"
	"hash/maphash"
	"unicode"
	"unicode/utf8"
)

// CountTokens is the number of tokens of s: each maximal run of letters and
// digits counts a token for every four runes (rounded up), every other rune
// that is not a space one token (a byte that is not UTF-8 too).
func CountTokens(s string) int {
	n := 0
	scanTokens(s, func(int, int) { n++ })
	return n
}

// scanTokens calls emit with the byte span of each token of s, in order.
func scanTokens(s string, emit func(start, end int)) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case isWord(r):
			start, runes := i, 0
			for i < len(s) {
				r, size := utf8.DecodeRuneInString(s[i:])
				if !isWord(r) {
					break
				}
				i += size
				if runes++; runes == 4 {
					emit(start, i)
					start, runes = i, 0
				}
			}
			if runes > 0 {
				emit(start, i)
			}
		default:
			emit(i, i+size)
			i += size
		}
	}
}

func isWord(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// cutTokens is the start of s that holds its first n tokens, as a model
// cut at its completion cap writes it.
func cutTokens(s string, n int) string {
	end, seen := 0, 0
	scanTokens(s, func(_, e int) {
		if seen < n {
			end = e
		}
		seen++
	})
	return s[:end]
}

// Tokens of the conversation's framing: three for each message and three
// that prime the reply.
const (
	perMessage = 3
	perReply   = 3
	// cacheBlock is the step of cached prefixes, in tokens.
	cacheBlock = 128
)

// PromptTokens is the number of prompt tokens of req: the tokens of its
// tools' JSON, then of each message's text (content, name, tool_call_id
// and tool calls' id, name and arguments) plus 3 for each message, plus 3
// that prime the reply.
func PromptTokens(req *Request) int {
	var w tokenWriter
	w.prompt(req)
	return w.n
}

// promptBlocks is the prompt tokens of req and the hashes of its prefixes
// of whole cacheBlock-token blocks: blocks[k] covers the text of tokens
// [0, (k+1)*cacheBlock), so that any change before a block's end changes it.
func promptBlocks(req *Request, seed maphash.Seed) (tokens int, blocks []uint64) {
	w := tokenWriter{h: new(maphash.Hash)}
	w.h.SetSeed(seed)
	w.prompt(req)
	return w.n, w.blocks
}

// tokenWriter counts the tokens of a serialized prompt and, when h is set,
// hashes its text at each block boundary.
type tokenWriter struct {
	n      int
	h      *maphash.Hash
	blocks []uint64
}

// prompt writes the tools, then the messages in order, then the priming.
func (w *tokenWriter) prompt(req *Request) {
	if len(req.Tools) > 0 {
		w.text(toolsJSON(req.Tools))
	}
	for _, m := range req.Messages {
		w.special("<|start|>" + m.Role)
		w.text(m.Content)
		w.text(m.Name)
		w.text(m.ToolCallID)
		for _, c := range m.ToolCalls {
			w.text(c.ID)
			w.text(c.Name)
			w.text(c.Arguments)
		}
		w.special("<|message|>")
		w.special("<|end|>")
	}
	for _, s := range []string{"<|start|>assistant", "<|message|>", "<|reply|>"} {
		w.special(s)
	}
}

// text writes one field: its tokens, each with the spaces before it.
func (w *tokenWriter) text(s string) {
	prev := 0
	scanTokens(s, func(_, end int) {
		if w.h != nil {
			w.h.WriteString(s[prev:end])
		}
		prev = end
		w.tick()
	})
	if w.h != nil {
		w.h.WriteString(s[prev:])
		w.h.WriteByte(0) // ends the field
	}
}

// special writes one framing token.
func (w *tokenWriter) special(s string) {
	if w.h != nil {
		w.h.WriteString(s)
		w.h.WriteByte(0)
	}
	w.tick()
}

func (w *tokenWriter) tick() {
	w.n++
	if w.h != nil && w.n%cacheBlock == 0 {
		w.blocks = append(w.blocks, w.h.Sum64())
	}
}

// toolsJSON is the tools as the API lists them, compact, in the order and
// with the parameters the client sent.
func toolsJSON(tools []Tool) string {
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	out := make([]tool, len(tools))
	for i, t := range tools {
		params := t.Parameters
		if !json.Valid(params) {
			params = nil
		}
		out[i] = tool{Type: "function", Function: function{Name: t.Name, Description: t.Description, Parameters: params}}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "" // cannot happen: parameters are valid JSON or left out
	}
	return string(b)
}

// callTokens is what one tool call of an answer costs.
func callTokens(c ToolCall) int { return CountTokens(c.Name) + CountTokens(c.Arguments) }
