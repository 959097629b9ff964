// Package inert makes untrusted text safe to print to a terminal or a log:
// text a model, a web page, a message, an owner or an agent's name may
// have written. Text replaces every character that could drive a terminal
// or reorder what it shows with a visible stand-in, so the text reads as
// it is and does nothing.
//
// It may import nothing of the project.
package inert

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Replacement is the stand-in of a C1 control, a bidirectional control,
// a line or paragraph separator and a byte that is not UTF-8. C0 controls
// and DEL become their Control Pictures (ESC is ␛, BEL ␇, DEL ␡).
const Replacement = '\uFFFD'

// Text returns s with every control character but newline and tab
// replaced by a visible stand-in: the C0 controls (NUL to US, ESC and BEL
// among them, and carriage return) by their Control Pictures (U+2400 on),
// DEL by ␡, and the C1 controls (U+0080 to U+009F, CSI and OSC among
// them), the bidirectional controls (U+202A to U+202E, U+2066 to U+2069,
// U+200E, U+200F, U+061C), U+2028, U+2029 and bytes that are not UTF-8 by
// U+FFFD. So no escape sequence (CSI, OSC such as a window title, a
// screen clear) reaches a terminal whole, and nothing reorders the text
// shown. Text that needs no change is returned as it is.
func Text(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			b.WriteRune(Replacement)
			i++
			continue
		}
		b.WriteRune(standIn(r))
		i += n
	}
	return b.String()
}

// firstUnsafe is the byte index of the first character of s that Text
// replaces, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if unsafeRune(rune(c)) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || unsafeRune(r) {
			return i
		}
		i += n
	}
	return -1
}

// unsafeRune reports whether Text replaces r.
func unsafeRune(r rune) bool { return standIn(r) != r }

// standIn is what Text prints for r: r itself when it is safe.
func standIn(r rune) rune {
	switch {
	case r == '\n' || r == '\t':
		return r
	case r < 0x20:
		return 0x2400 + r
	case r == 0x7F:
		return '\u2421'
	case r >= 0x80 && r <= 0x9F,
		r >= 0x202A && r <= 0x202E,
		r >= 0x2066 && r <= 0x2069,
		r == 0x200E, r == 0x200F, r == 0x061C,
		r == 0x2028, r == 0x2029:
		return Replacement
	}
	return r
}

// Unsafe reports whether s has a character Text would replace: what a
// test asserts never reaches a terminal.
func Unsafe(s string) bool { return firstUnsafe(s) >= 0 }

// JSON returns the JSON text b with every character Text would replace
// written as its \u escape, so JSON printed to a terminal is inert and
// still decodes to the same values: encoding/json escapes the C0 controls
// but writes DEL, the C1 and the bidirectional controls as they are. b
// must be valid JSON (such characters appear only inside its strings);
// bytes that are not UTF-8 become \ufffd.
func JSON(b []byte) []byte {
	s := string(b)
	i := firstUnsafe(s)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, s[:i]...)
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			out = append(out, `\ufffd`...)
		case unsafeRune(r):
			out = append(out, fmt.Sprintf(`\u%04x`, r)...)
		default:
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return out
}
