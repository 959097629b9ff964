package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// fixedTable writes rows whose columns have fixed display widths, so that
// rows printed at different times (a follow) line up; the last column is
// not padded. Cells are padded by display width, wide characters included.
type fixedTable struct {
	w      io.Writer
	widths []int
	err    error
}

func (t *fixedTable) row(cells ...string) {
	var b strings.Builder
	for i, c := range cells {
		c = oneLine(c)
		if i < len(t.widths) && i < len(cells)-1 {
			c = fit(c, t.widths[i])
			c += strings.Repeat(" ", t.widths[i]-runewidth.StringWidth(c)+2)
		}
		b.WriteString(c)
	}
	b.WriteByte('\n')
	if t.err == nil {
		_, t.err = io.WriteString(t.w, b.String())
	}
}

func (t *fixedTable) flush() error {
	if t.err != nil {
		return fmt.Errorf("error writing events: %w", t.err)
	}
	return nil
}
