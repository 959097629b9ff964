package jobs

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/cite"
)

// A step whose reply ends its run (a report) commits in fewer round
// trips than a step that runs tools in its transaction: the batch that
// begins the transaction and locks the tree reads what the end reads
// after it (the tree's runs, for the sub-agents the end cancels, and the
// tree's sources, for the citation check), and the step's record, its
// citations and the run's end go to Postgres together, in the batch that
// ends the run.

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

// queueLockEnding queues on b, after the lock of the tree of run and of
// run itself (queueLockTree), what the end reads: the tree's runs and,
// when the report will be checked, the tree's sources. Once b ran, the
// ending holds them.
func queueLockEnding(b *pgx.Batch, run *Run, report string) *ending {
	end := &ending{b: &pgx.Batch{}}
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
	return end
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
