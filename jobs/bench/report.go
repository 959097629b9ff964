package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Cell is one figure of the table: its value, NaN when there is none, and
// how it is printed.
type Cell struct {
	Value float64
	Text  string
}

// Row is one line of the table: gb's figure beside its baseline's.
type Row struct {
	// Measure says what is measured.
	Measure string
	// GB and Base are the figure and its baseline's.
	GB, Base Cell
	// Ratio is GB over Base, NaN when either is missing or Base is 0.
	Ratio float64
	// Baseline says what the baseline is.
	Baseline string
}

// PhaseStatements are the statements of one measured phase, for checking
// whose each one is (River's, gb's, a transaction's).
type PhaseStatements struct {
	Phase string
	// Steps divides the counts: the phase's steps or hops.
	Steps int
	Top   []StatementCount
}

// Report is the result of Run.
type Report struct {
	// Title says what was run, on what.
	Title string
	Rows  []Row
	// Statements are the most frequent statements of each phase.
	Statements []PhaseStatements
	// Notes explain the figures below the table.
	Notes []string
}

func (r *Report) add(measure string, gb, base Cell, baseline string) {
	ratio := math.NaN()
	if !math.IsNaN(gb.Value) && !math.IsNaN(base.Value) && base.Value != 0 {
		ratio = gb.Value / base.Value
	}
	r.Rows = append(r.Rows, Row{Measure: measure, GB: gb, Base: base, Ratio: ratio, Baseline: baseline})
}

// Row returns the row of a measure, or nil.
func (r *Report) Row(measure string) *Row {
	for i := range r.Rows {
		if r.Rows[i].Measure == measure {
			return &r.Rows[i]
		}
	}
	return nil
}

// Print writes the table, and with verbose the top statements of each
// phase after it.
func (r *Report) Print(w io.Writer, verbose bool) error {
	lines := [][]string{{"measure", "gb", "baseline", "gb/baseline", "baseline is"}}
	for _, row := range r.Rows {
		ratio := "-"
		if !math.IsNaN(row.Ratio) {
			ratio = fmt.Sprintf("%.2f", row.Ratio)
		}
		lines = append(lines, []string{row.Measure, row.GB.Text, row.Base.Text, ratio, row.Baseline})
	}
	widths := make([]int, 4)
	for _, l := range lines {
		for i := range widths {
			widths[i] = max(widths[i], utf8.RuneCountInString(l[i]))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", r.Title)
	for _, l := range lines {
		b.WriteString(l[0] + strings.Repeat(" ", widths[0]-utf8.RuneCountInString(l[0])))
		for i := 1; i < 4; i++ {
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(l[i])+2) + l[i])
		}
		b.WriteString("  " + l[4] + "\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "%s\n", n)
	}
	if verbose {
		for _, p := range r.Statements {
			fmt.Fprintf(&b, "\n%s: round trips per step by statement (%d steps; commit: a write outside a transaction)\n",
				p.Phase, p.Steps)
			for _, s := range p.Top {
				own := ""
				if s.Alone {
					own = "commit"
				}
				fmt.Fprintf(&b, "  %7.2f  %-5s  %-6s  %s\n", float64(s.Count)/float64(max(p.Steps, 1)), s.Kind, own, s.Text)
			}
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("error writing the table: %w", err)
	}
	return nil
}

// Cells of the table.

func rate(v float64) Cell { return Cell{Value: v, Text: fmt.Sprintf("%.1f", v)} }

func count(v float64, prec int) Cell { return Cell{Value: v, Text: fmt.Sprintf("%.*f", prec, v)} }

func na(why string) Cell { return Cell{Value: math.NaN(), Text: why} }

func fraction(v float64) Cell { return Cell{Value: v, Text: fmt.Sprintf("%.2f", v)} }

func megabytes(kb int64) Cell {
	return Cell{Value: float64(kb) / 1024, Text: fmt.Sprintf("%.1f MB", float64(kb)/1024)}
}

// dur prints a duration in the unit that suits it.
func dur(d time.Duration) Cell {
	v := float64(d)
	var text string
	switch {
	case d < time.Millisecond:
		text = fmt.Sprintf("%.0fµs", v/float64(time.Microsecond))
	case d < time.Second:
		text = fmt.Sprintf("%.2fms", v/float64(time.Millisecond))
	default:
		text = fmt.Sprintf("%.2fs", v/float64(time.Second))
	}
	return Cell{Value: v, Text: text}
}
