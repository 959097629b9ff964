package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mattn/go-runewidth"
	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/infra/inert"
)

// output is the -o/--output (and --json) flag of a read command.
type output struct {
	format string
	json   bool
}

// addOutput gives cmd -o json|table (default table) and --json.
func addOutput(cmd *cobra.Command) *output {
	o := &output{}
	cmd.Flags().StringVarP(&o.format, "output", "o", "table", "output format: table or json")
	cmd.Flags().BoolVar(&o.json, "json", false, "same as -o json")
	return o
}

// isJSON reports whether JSON was asked for, or why the flag is wrong.
func (o *output) isJSON() (bool, error) {
	switch {
	case o.json:
		return true, nil
	case o.format == "json":
		return true, nil
	case o.format == "table":
		return false, nil
	}
	return false, usageErrorf("-o %q is not an output format; use table or json", o.format)
}

// writeJSON prints v as indented JSON: the API's field names, unchanged,
// and the controls of its strings escaped (inert.JSON), so that JSON on a
// terminal is inert and decodes to the same values.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("error writing JSON: %w", err)
	}
	if _, err := w.Write(inert.JSON(buf.Bytes())); err != nil {
		return fmt.Errorf("error writing JSON: %w", err)
	}
	return nil
}

// table writes aligned columns with text/tabwriter.
type table struct {
	tw   *tabwriter.Writer
	w    io.Writer
	rows int // lines written, the header's included
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0), w: w}
	t.row(header...)
	return t
}

// row writes one line; tabs and newlines in cells become spaces.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = oneLine(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
	t.rows++
}

// flushOrEmpty flushes the table and, when it holds no row but its header,
// says so on a line of its own after the header ("no researches"), so that
// an empty list reads as empty rather than as a fault.
func (t *table) flushOrEmpty(none string) error {
	if err := t.flush(); err != nil {
		return err
	}
	if t.rows > 1 {
		return nil
	}
	if _, err := fmt.Fprintln(t.w, none); err != nil {
		return fmt.Errorf("error writing table: %w", err)
	}
	return nil
}

func (t *table) flush() error {
	if err := t.tw.Flush(); err != nil {
		return fmt.Errorf("error writing table: %w", err)
	}
	return nil
}

// tokenParts is what a count of tokens held of cached prompt tokens and,
// when there were any, reasoning tokens: " (600 cached)" or
// " (600 cached, 50 reasoning)".
func tokenParts(cached, reasoning int64) string {
	if reasoning == 0 {
		return fmt.Sprintf(" (%d cached)", cached)
	}
	return fmt.Sprintf(" (%d cached, %d reasoning)", cached, reasoning)
}

// estimatedNote is " · N calls at their estimate" when some model calls of
// a tree were settled at their estimate, else "".
func estimatedNote(calls int) string {
	switch calls {
	case 0:
		return ""
	case 1:
		return " · 1 call at its estimate"
	}
	return fmt.Sprintf(" · %d calls at their estimate", calls)
}

// count is n and its noun, plural but for 1: "1 agent", "2 agents".
func count[N ~int | ~int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// oneLine folds all white space of s, newlines and tabs included, into
// single spaces, and makes it inert (inert.Text): what a model, a page or
// an agent wrote cannot drive the terminal.
func oneLine(s string) string { return strings.Join(strings.Fields(inert.Text(s)), " ") }

// fit cuts s to at most width display columns, ending with "…" when cut.
// It counts wide characters (CJK, emoji) as two columns and never cuts
// inside a character or a grapheme cluster.
func fit(s string, width int) string {
	s = oneLine(s)
	if runewidth.StringWidth(s) <= width {
		return s
	}
	cut := runewidth.Truncate(s, width-runewidth.StringWidth("…"), "")
	return strings.TrimRight(cut, " ") + "…"
}
