package fetch

// Slice returns the part of text that starts offset characters (runes) in
// and holds at most max of them, and how many characters are left after
// it. An offset past the end gives "" and 0; a negative one counts as 0,
// and max < 1 as 1.
func Slice(text string, offset, max int) (part string, left int) {
	offset, max = maxInt(offset, 0), maxInt(max, 1)
	start, n := -1, 0 // byte index of rune number offset; runes seen
	end := len(text)
	for i := range text {
		if n == offset {
			start = i
		}
		if n == offset+max {
			end = i
			break
		}
		n++
	}
	if start < 0 {
		return "", 0
	}
	part = text[start:end]
	for range text[end:] {
		left++
	}
	return part, left
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
