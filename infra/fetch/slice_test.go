package fetch

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSliceReturnsEverythingOnce pages texts, ASCII and not, at several
// page sizes: the parts joined are the text, each part holds at most max
// characters, and "left" counts what follows.
func TestSliceReturnsEverythingOnce(t *testing.T) {
	texts := []string{"", "a", "héllo wörld — ünïcode ✓ 日本語テキスト", strings.Repeat("Go 🐹 spec. ", 5000)}
	for _, text := range texts {
		total := utf8.RuneCountInString(text)
		sizes := []int{1, 3, 7, 20000}
		if total > 1000 {
			sizes = []int{997, 20000}
		}
		for _, size := range sizes {
			var b strings.Builder
			offset := 0
			for {
				part, left := Slice(text, offset, size)
				if n := utf8.RuneCountInString(part); n > size || left != max(total-offset-n, 0) {
					t.Fatalf("Slice(len %d, %d, %d) = %d chars, %d left", total, offset, size, n, left)
				}
				b.WriteString(part)
				offset += utf8.RuneCountInString(part)
				if left == 0 {
					break
				}
			}
			if b.String() != text {
				t.Fatalf("pages of %d chars do not rebuild the text (%d of %d chars)", size, utf8.RuneCountInString(b.String()), total)
			}
		}
	}
	if part, left := Slice("abc", 10, 5); part != "" || left != 0 {
		t.Errorf("past the end: %q, %d", part, left)
	}
	if part, left := Slice("abc", -2, 0); part != "a" || left != 2 {
		t.Errorf("negative offset and max: %q, %d", part, left)
	}
}
