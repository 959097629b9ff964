package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs/kb"
)

// notesPage is the answer of GET /v1/gb/research/{id}/notes.
type notesPage struct {
	RootID    int64     `json:"root_id"`
	Notes     []kb.Note `json:"notes"`
	NotesFrom []int64   `json:"notes_from"`
}

func researchNotesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notes ID",
		Short: "The notes the agents of a run's tree remembered",
		Long: `Prints the notes the agents of the run's research remembered (remember), which
only that research sees, and the researches it reads notes from besides
(--notes-from at its start). They are deleted with the research.`,
		Example: `  gb research notes 1
  gb research notes 1 -o json`,
		Args: args(1, 1, "one run ID"),
	}
	o := addOutput(cmd)
	cmd.RunE = withRun(o, func(ctx context.Context, c *apiClient, cmd *cobra.Command, id int64, asJSON bool) error {
		var p notesPage
		if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/notes", id), nil, &p); err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), p)
		}
		return printNotes(cmd.OutOrStdout(), p)
	})
	return cmd
}

// printNotes prints each note, its title, run and time, then its text,
// inert (printable): agents wrote them, maybe quoting pages.
func printNotes(w io.Writer, p notesPage) error {
	if len(p.NotesFrom) > 0 {
		from := make([]string, len(p.NotesFrom))
		for i, id := range p.NotesFrom {
			from[i] = fmt.Sprint(id)
		}
		fmt.Fprintf(w, "research %d also reads the notes of: %s\n\n", p.RootID, strings.Join(from, ", "))
	}
	if len(p.Notes) == 0 {
		_, err := fmt.Fprintf(w, "no notes in research %d\n", p.RootID)
		return err
	}
	for i, n := range p.Notes {
		if i > 0 {
			fmt.Fprintln(w)
		}
		by := "a deleted sub-agent"
		if n.RunID != nil {
			by = fmt.Sprintf("run %d", *n.RunID)
		}
		fmt.Fprintf(w, "[note %d] %s · %s · %s\n", n.ID, oneLine(n.Title), by, n.CreatedAt.Local().Format("2006-01-02 15:04:05"))
		if _, err := fmt.Fprintln(w, printable(strings.TrimSpace(n.Body))); err != nil {
			return fmt.Errorf("error writing notes: %w", err)
		}
	}
	return nil
}
