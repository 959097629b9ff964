package jobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/cite"
)

// A step whose reply ends its run (a report) commits in fewer round
// trips than a step that runs tools in its transaction: the tree's lock
// reads, in the same batch, what the end reads after it (the tree's runs,
// for the sub-agents the end cancels, and the tree's sources, for the
// citation check), and the step's record, its citations and the run's end
// go to Postgres together, in the batch that ends the run.

// ending is what the transaction of a step that may end its run read with
// its lock, and the writes it holds back to send with the end's own.
type ending struct {
	tree    []*Run          // the tree's runs, read with the lock
	docs    []cite.Document // the tree's sources, when the report is checked
	hasDocs bool
	b       *pgx.Batch // writes sent with the end's (flush sends them sooner)
}

// treeRunsSQL reads the runs of a tree ($1, its root), deepest first.
const treeRunsSQL = "SELECT " + runColumns + ` FROM gb_agent_research_runs WHERE root_id = $1
	ORDER BY depth DESC, id`

// lockEnding locks the tree of run and run itself, like lockTree, and
// reads in the same round trip the tree's runs and, when the report will
// be checked, the tree's sources. It returns a nil run when the run is gone.
func (a *Service) lockEnding(ctx context.Context, tx pgx.Tx, run *Run, report string) (*Run, *ending, error) {
	end := &ending{b: &pgx.Batch{}}
	var locked []*Run
	b := &pgx.Batch{}
	b.Queue(lockTreeSQL, []int64{run.RootID, run.ID}).Query(func(rows pgx.Rows) (err error) {
		locked, err = pgx.AppendRows([]*Run(nil), rows, scanRun)
		return err
	})
	b.Queue(treeRunsSQL, run.RootID).Query(func(rows pgx.Rows) (err error) {
		end.tree, err = pgx.AppendRows([]*Run(nil), rows, scanRun)
		return err
	})
	if run.IsRoot() && run.CitationsMode != CitationsOff && strings.TrimSpace(report) != "" {
		b.Queue(treeDocumentsSQL, run.RootID).Query(func(rows pgx.Rows) (err error) {
			end.docs, err = scanDocuments(rows)
			end.hasDocs = err == nil
			return err
		})
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, fmt.Errorf("error locking tree %d: %w", run.RootID, err)
	}
	for _, r := range locked {
		if r.ID == run.ID {
			return r, end, nil
		}
	}
	return nil, end, nil
}

// batch is where the end queues its writes: the held-back ones' batch,
// or a new one.
func (e *ending) batch() *pgx.Batch {
	if e == nil {
		return &pgx.Batch{}
	}
	return e.b
}

// flush sends the writes held back, before a statement that must see them.
func (e *ending) flush(ctx context.Context, tx pgx.Tx) error {
	if e == nil || e.b.Len() == 0 {
		return nil
	}
	b := e.b
	e.b = &pgx.Batch{}
	return tx.SendBatch(ctx, b).Close()
}

// sent forgets the writes held back once the batch that holds them was sent.
func (e *ending) sent() {
	if e != nil {
		e.b = &pgx.Batch{}
	}
}

// documents are the sources of the tree rootID: those read with the lock,
// or read now.
func (e *ending) documents(ctx context.Context, tx pgx.Tx, rootID int64) ([]cite.Document, error) {
	if e != nil && e.hasDocs {
		return e.docs, nil
	}
	return treeDocuments(ctx, tx, rootID)
}

// runs are the runs of the tree of run: those read with the lock, or read now.
func (e *ending) runs(ctx context.Context, tx pgx.Tx, run *Run) ([]*Run, error) {
	if e != nil && e.tree != nil {
		return e.tree, nil
	}
	return queryRuns(ctx, tx, treeRunsSQL, run.RootID)
}
