package db_test

import (
	"context"
	"strings"
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

// TestOpenPlansStatementsOnce: the pool's connections plan each prepared
// statement once (force_generic_plan), unless the URL sets plan_cache_mode,
// and a Proxy pool, which prepares nothing, leaves Postgres's default.
func TestOpenPlansStatementsOnce(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	for _, c := range []struct {
		name string
		cfg  db.PoolConfig
		want string
	}{
		{"default", db.PoolConfig{URL: url, MaxConns: 1}, "force_generic_plan"},
		{"the URL's", db.PoolConfig{URL: url + sep + "plan_cache_mode=auto", MaxConns: 1}, "auto"},
		{"Proxy", db.PoolConfig{URL: url, MaxConns: 1, Proxy: true}, "auto"},
	} {
		pool, err := db.Open(context.Background(), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		err = pool.QueryRow(context.Background(), "SHOW plan_cache_mode").Scan(&mode)
		pool.Close()
		if err != nil || mode != c.want {
			t.Errorf("plan_cache_mode of the %s pool: %q, %v; want %q", c.name, mode, err, c.want)
		}
	}
}
