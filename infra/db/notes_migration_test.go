package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/migrations"
)

// TestNotesMigrateToTheirTree: the notes stored before notes belonged to
// trees (in a dataset, with the run that wrote them) go to the tree of
// that run and out of the dataset; the notes of runs already deleted go;
// loaded documents stay as they were. Down and up again keeps them.
func TestNotesMigrateToTheirTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.DownTo(ctx, 25); err != nil {
		t.Fatal(err)
	}
	var root, child, note, orphan, doc int64
	steps := []struct {
		sql  string
		args []any
		into *int64
	}{
		{`INSERT INTO gb_users (name) VALUES ('old') RETURNING id`, nil, new(int64)},
		{`INSERT INTO gb_kb_datasets (name) VALUES ('old') RETURNING 0`, nil, new(int64)},
		{`INSERT INTO gb_agent_research_runs (user_id, topic, model, dataset, max_steps)
			SELECT id, 'tides', 'm', 'old', 5 FROM gb_users WHERE name = 'old' RETURNING id`, nil, &root},
	}
	for _, s := range steps {
		if err := pool.QueryRow(ctx, s.sql, s.args...).Scan(s.into); err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
	}
	if err := pool.QueryRow(ctx, `INSERT INTO gb_agent_research_runs (user_id, parent_id, root_id, depth, name, topic, model, dataset, max_steps)
		SELECT user_id, id, id, 1, 'sub', 'tides', 'm', 'old', 5 FROM gb_agent_research_runs WHERE id = $1 RETURNING id`, root).Scan(&child); err != nil {
		t.Fatal(err)
	}
	insert := func(source string, run *int64) int64 {
		t.Helper()
		var id int64
		if err := pool.QueryRow(ctx, `INSERT INTO gb_kb_documents (dataset, source, title, body, run_id)
			VALUES ('old', $1, 't', 'b', $2) RETURNING id`, source, run).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	note = insert("note:run-2:1", &child)
	orphan = insert("note:run-99:2", nil)
	doc = insert("tides.md", nil)

	if _, err := provider.UpTo(ctx, 26); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		var tree *int64
		var dataset *string
		if err := pool.QueryRow(ctx, "SELECT tree_id, dataset FROM gb_kb_documents WHERE id = $1", note).Scan(&tree, &dataset); err != nil ||
			tree == nil || *tree != root || dataset != nil {
			t.Errorf("the note: tree %v, dataset %v (%v); want tree %d and no dataset", tree, dataset, err, root)
		}
		if err := pool.QueryRow(ctx, "SELECT tree_id, dataset FROM gb_kb_documents WHERE id = $1", doc).Scan(&tree, &dataset); err != nil ||
			tree != nil || dataset == nil || *dataset != "old" {
			t.Errorf("the loaded document: tree %v, dataset %v (%v)", tree, dataset, err)
		}
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM gb_kb_documents WHERE id = $1", orphan).Scan(&n); err != nil || n != 0 {
			t.Errorf("the note of a deleted run is still stored (%d, %v)", n, err)
		}
	}
	check()
	if _, err := provider.DownTo(ctx, 25); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(ctx, 26); err != nil {
		t.Fatal(err)
	}
	check()
	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
}
