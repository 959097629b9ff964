package compact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRuneCount(t *testing.T) {
	for _, s := range []string{"", "a", "abcdefgh", "abcdefghi", "é", "‹‹‹ page ›››", "日本語のテキスト、少し長め。",
		strings.Repeat("aé€😀", 37), "x" + strings.Repeat("😀", 9), "\x00\x7f\u0080\u07ff\u0800\uffff"} {
		if got, want := runeCount(s), utf8.RuneCountInString(s); got != want {
			t.Errorf("runeCount(%q) = %d, want %d", s, got, want)
		}
	}
}
