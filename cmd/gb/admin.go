package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/fetch"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/doctext"
	"github.com/gbresearch/gb/jobs/kb"
)

// openDB opens the pool of DATABASE_URL for the admin commands.
func openDB(ctx context.Context) (*pgxpool.Pool, error) {
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		return nil, fmt.Errorf("DATABASE_URL is not set; for a local database run: export DATABASE_URL=$(infra/pg.sh start)")
	}
	return db.Open(ctx, db.PoolConfig{URL: u})
}

func migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "migrate",
		Short:   "Apply the schema to DATABASE_URL (gb's migrations and River's)",
		Example: "  DATABASE_URL=$(infra/pg.sh start) gb migrate",
		Args:    args(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			pool, err := openDB(cmd.Context())
			if err != nil {
				return err
			}
			defer pool.Close()
			n, err := db.Migrate(cmd.Context(), pool, slog.New(slog.DiscardHandler))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "database is up to date (%s applied now)\n", count(n, "migration"))
			return nil
		},
	}
}

func usersCmd() *cobra.Command {
	var maxSubagents string
	set := &cobra.Command{
		Use:   "set NAME --max-subagents N",
		Short: "Set a user's bound on the sub-agents of their new researches (DATABASE_URL)",
		Example: `  gb users set alice --max-subagents 0        # alice's researches spawn no sub-agents
  gb users set alice --max-subagents default  # back to the server's GB_MAX_SUBAGENTS`,
		Args: args(1, 1, "the user's name"),
		RunE: func(cmd *cobra.Command, a []string) error {
			var n *int
			if maxSubagents != "default" {
				v, err := strconv.Atoi(maxSubagents)
				if err != nil {
					return usageErrorf("--max-subagents must be a whole number from 0 to %d, or default (got %q)", jobs.MaxSubagentsPerTree, maxSubagents)
				}
				n = &v
			}
			pool, err := openDB(cmd.Context())
			if err != nil {
				return err
			}
			defer pool.Close()
			if err := jobs.SetUserMaxSubagents(cmd.Context(), pool, a[0], n); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: max sub-agents %s (for researches started from now on)\n", a[0], maxSubagents)
			return nil
		},
	}
	set.Flags().StringVar(&maxSubagents, "max-subagents", "", "0 to 10, or default (required)")
	_ = set.MarkFlagRequired("max-subagents")
	return group("users", "Manage users (DATABASE_URL)", "  gb users set alice --max-subagents 2", set)
}

func kbCmd() *cobra.Command {
	load := &cobra.Command{
		Use:   "load DATASET PATH...",
		Short: "Load documents (.md, .txt, .pdf, .docx, .pptx, .xlsx, .csv, .html) or Go source trees into a dataset (DATABASE_URL)",
		Long: `Load documents (.md, .txt, .pdf, .docx, .pptx, .xlsx, .csv, .html) or Go source
trees into a dataset (DATABASE_URL), directories recursively; each file's
path is its source. A PDF keeps its pages ("[page N]" lines), a deck its
slides and a workbook its sheets, so that read can go to a page and a
citation name it. A file that is malformed, too large or has no text layer
(a scanned PDF) is skipped with a line on stderr saying why.

Each Go package becomes one document of its whole documentation (go/doc):
package comment, constants, variables, functions, types with their fields
and methods, methods with their receivers, and examples. Every document is
indexed in passages (headings, declarations, paragraphs) for search.

A file whose bytes did not change since the last load is not read again,
and a document whose content did not change is not written again,
and loading a directory again removes the documents of that directory whose
files are gone (documents loaded from other paths are kept). It prints
"N loaded, M unchanged" (and "K removed").`,
		Example: `  gb kb load godoc "$(go env GOROOT)/src"
  gb kb load notes ./docs`,
		Args: args(2, -1, "a DATASET and at least one PATH"),
		RunE: func(cmd *cobra.Command, a []string) error {
			pool, err := openDB(cmd.Context())
			if err != nil {
				return err
			}
			defer pool.Close()
			known, err := kb.FileHashes(cmd.Context(), pool, a[0])
			if err != nil {
				return err
			}
			progress := newLoadProgress(cmd.ErrOrStderr())
			docs, skipped, err := kb.FromPathsWith(a[1:], kb.ReadOptions{Doc: doctext.Options{HTML: fetch.HTML}, Known: known, Progress: progress.file})
			progress.done()
			if err != nil {
				return err
			}
			for _, s := range skipped {
				fmt.Fprintf(cmd.ErrOrStderr(), "skipped %s: %v\n", s.Path, s.Err)
			}
			if len(docs) == 0 {
				return fmt.Errorf("no documents found in %v (loadable: .md, .txt, .pdf, .docx, .pptx, .xlsx, .csv and .html files, Go package directories)", a[1:])
			}
			stats, err := kb.Sync(cmd.Context(), pool, a[0], docs)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dataset %q: %s\n", a[0], stats)
			return nil
		},
	}
	return group("kb", "Manage the knowledge base (DATABASE_URL)", `  gb kb load godoc "$(go env GOROOT)/src"`, load)
}

// loadProgress writes, on a terminal, how many files a load has read and
// the last one, on one line rewritten in place; elsewhere nothing.
type loadProgress struct {
	w     io.Writer
	on    bool
	n     int
	width int
	last  time.Time
}

func newLoadProgress(w io.Writer) *loadProgress {
	p := &loadProgress{w: w}
	if f, ok := w.(*os.File); ok {
		p.width, p.on = terminalWidth(f)
	}
	return p
}

// file counts one file read and, at most ten times a second, says so.
func (p *loadProgress) file(path string) {
	p.n++
	if !p.on || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	line := fmt.Sprintf("read %d files: %s", p.n, path)
	if w := max(p.width-1, 20); len(line) > w {
		line = line[:w]
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
}

// done clears the progress line.
func (p *loadProgress) done() {
	if p.on && p.n > 0 {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
