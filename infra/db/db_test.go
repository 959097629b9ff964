package db_test

import (
	"context"
	"testing"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
)

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	ctx := context.Background()

	// The template was migrated already: a second pass applies nothing.
	n, err := db.Migrate(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("second migrate applied %d migrations, want 0", n)
	}
	for _, table := range []string{"gb_agent_research_runs", "gb_agent_research_states",
		"gb_agent_research_steps", "gb_agent_research_events", "gb_kb_documents",
		"gb_users", "gb_api_keys", "gb_messages", "gb_inboxes", "river_job"} {
		var ok bool
		if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("table %s missing after migrate", table)
		}
	}
}
