package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gbresearch/gb/jobs/llm"
)

// The text helpers of the package: cutting text by characters (runes, not
// bytes) for what agents read and show, and making a step's messages
// storable. Making text itself storable and sendable (NUL characters,
// invalid UTF-8) is llm.CleanText.

// truncateRunes cuts s to at most n characters.
func truncateRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// oneLine joins s's whitespace and cuts it to at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		return truncateRunes(s, n) + "…"
	}
	return s
}

// pageSlice returns at most size characters of text from offset, and how
// many characters are left after them.
func pageSlice(text string, offset, size int) (string, int) {
	i, start, end := 0, len(text), len(text)
	for pos := range text {
		if i == offset {
			start = pos
		}
		if i == offset+size {
			end = pos
			break
		}
		i++
	}
	if start > end {
		start = end
	}
	part := text[start:end]
	left := utf8.RuneCountInString(text[end:])
	return part, left
}

// encodeMessages encodes a step's messages for the jsonb column, which
// refuses NUL characters: a model or document that produced one loses it
// rather than failing the step on every attempt.
func encodeMessages(msgs []llm.Message) (string, error) {
	b, err := json.Marshal(msgs)
	if err != nil {
		return "", fmt.Errorf("error encoding step messages: %w", err)
	}
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return string(b), nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("error encoding step messages: %w", err)
	}
	b, err = json.Marshal(stripNUL(v))
	if err != nil {
		return "", fmt.Errorf("error encoding step messages: %w", err)
	}
	return string(b), nil
}

// stripNUL removes the NUL characters of every string in a decoded JSON
// value, in place.
func stripNUL(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "\x00", "")
	case []any:
		for i := range x {
			x[i] = stripNUL(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = stripNUL(e)
		}
	}
	return v
}
