package kb

import (
	"context"
	"fmt"
	"time"
)

// Notes belong to a research tree, not to a dataset: a note an agent
// remembers is seen by the agents of its tree, and by the agents of a
// tree its owner started to read it (ReadNotesFrom), never by others,
// and it is deleted with its tree (the tree_id foreign key). What a
// research sees is a Scope: a dataset's documents and the notes of its
// tree, searched in one query and ranked together.

// Scope is what the agents of a research see of the knowledge base: the
// documents of Dataset, and the notes of the tree whose root is Tree
// with those of the trees it reads notes from. Tree 0 sees no notes.
type Scope struct {
	Dataset string
	Tree    int64
}

// scopeSQL is the condition that document d is in a scope: its dataset
// is $1, or it is a note of tree $2 or of a tree that $2 reads notes
// from. Every query of a scope puts the dataset at $1 and the tree at $2.
// scopeIDsSQL is the same scope as a set of ids, for queries that start
// from it; the two change together.
const scopeSQL = `(d.dataset = $1 OR ($2::bigint <> 0 AND (d.tree_id = $2
	OR d.tree_id IN (SELECT f.from_tree_id FROM gb_kb_notes_from f WHERE f.tree_id = $2))))`

// scopeIDsSQL selects the ids of the documents in a scope (the documents
// scopeSQL admits), each through an index: those of dataset $1, the notes
// of tree $2, and the notes of the trees $2 reads notes from. A query
// that starts from them reads the passages of its scope alone, where
// scopeSQL's OR, tested row by row, read every passage of every dataset.
const scopeIDsSQL = `SELECT id FROM gb_kb_documents WHERE dataset = $1
	UNION SELECT id FROM gb_kb_documents WHERE $2::bigint <> 0 AND tree_id = $2
	UNION SELECT d.id FROM gb_kb_notes_from f JOIN gb_kb_documents d ON d.tree_id = f.from_tree_id
	WHERE $2::bigint <> 0 AND f.tree_id = $2`

// Remember stores an agent's note in the notes of tree (the root of the
// run's research), with its passages, where the agents of the tree find
// it. It returns the note's document id.
func Remember(ctx context.Context, db DB, tree, runID int64, title, text string) (int64, error) {
	if tree <= 0 {
		return 0, fmt.Errorf("error storing note: no research tree (%d)", tree)
	}
	source := fmt.Sprintf("note:run-%d:%d", runID, time.Now().UnixNano())
	var id int64
	err := inTx(ctx, db, func(tx DB) error {
		err := tx.QueryRow(ctx, `INSERT INTO gb_kb_documents (tree_id, source, title, body, run_id)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, tree, source, title, text, runID).Scan(&id)
		if err != nil {
			return err
		}
		return storePassages(ctx, tx, id, title, text, Split(text))
	})
	if err != nil {
		return 0, fmt.Errorf("error storing note: %w", err)
	}
	return id, nil
}

// ReadNotesFrom lets tree see the notes of the trees from, besides its
// own. The caller checks that they are roots of the same owner.
func ReadNotesFrom(ctx context.Context, db DB, tree int64, from []int64) error {
	if len(from) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, `INSERT INTO gb_kb_notes_from (tree_id, from_tree_id)
		SELECT $1, f FROM unnest($2::bigint[]) f WHERE f <> $1 ON CONFLICT DO NOTHING`, tree, from)
	if err != nil {
		return fmt.Errorf("error recording the trees notes are read from: %w", err)
	}
	return nil
}

// NotesFrom lists the trees whose notes tree sees besides its own.
func NotesFrom(ctx context.Context, db DB, tree int64) ([]int64, error) {
	var from []int64
	err := db.QueryRow(ctx, `SELECT coalesce(array_agg(from_tree_id ORDER BY from_tree_id), '{}')
		FROM gb_kb_notes_from WHERE tree_id = $1`, tree).Scan(&from)
	if err != nil {
		return nil, fmt.Errorf("error reading the trees notes are read from: %w", err)
	}
	return from, nil
}

// Note is a note of a tree, as listed to its owner.
type Note struct {
	ID        int64     `json:"id"`
	RunID     *int64    `json:"run_id"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
}

// Notes lists the notes of tree, oldest first.
func Notes(ctx context.Context, db DB, tree int64) ([]Note, error) {
	rows, err := db.Query(ctx, `SELECT id, run_id, title, body, created_at FROM gb_kb_documents
		WHERE tree_id = $1 ORDER BY id`, tree)
	if err != nil {
		return nil, fmt.Errorf("error listing notes: %w", err)
	}
	defer rows.Close()
	var out []Note
	for rows.Next() {
		var n Note
		if err := rows.Scan(&n.ID, &n.RunID, &n.Title, &n.Body, &n.CreatedAt); err != nil {
			return nil, fmt.Errorf("error listing notes: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error listing notes: %w", err)
	}
	return out, nil
}
