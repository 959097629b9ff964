//go:build !(linux || darwin)

package main

import "os"

// terminalWidth reports whether f is a terminal (a character device here)
// and its width in columns, which is unknown here (0).
func terminalWidth(f *os.File) (int, bool) {
	st, err := f.Stat()
	if err != nil || os.Getenv("TERM") == "dumb" {
		return 0, false
	}
	return 0, st.Mode()&os.ModeCharDevice != 0
}
