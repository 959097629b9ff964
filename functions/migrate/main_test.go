package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/functions/lambdatest"
	"github.com/gbresearch/gb/infra/dbtest"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// emptyDB creates an empty database (no schema at all), dropped when the
// test ends, and returns its URL.
func emptyDB(t *testing.T) string {
	t.Helper()
	base := dbtest.URL(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "gb_test_migrate_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// TestMigrateUnderEmulator runs the migrate bootstrap under aws-lambda-rie
// on an empty database, as after a first deploy, then again, as after the
// next deploy with no new migration.
func TestMigrateUnderEmulator(t *testing.T) {
	t.Parallel()
	dbURL := emptyDB(t)
	fn := lambdatest.Start(t, lambdatest.Build(t, "functions/migrate"), map[string]string{
		"DATABASE_URL":                dbURL,
		"AWS_LAMBDA_FUNCTION_TIMEOUT": "60",
	})
	applied := func() int {
		t.Helper()
		inv := fn.Invoke(t, lambdatest.Event(t, "testdata/invoke.json", nil))
		if inv.FunctionError != "" {
			t.Fatalf("migrate failed: %s", inv.Body)
		}
		var res result
		if err := json.Unmarshal(inv.Body, &res); err != nil {
			t.Fatalf("result %s: %v", inv.Body, err)
		}
		return res.Applied
	}
	if n := applied(); n == 0 {
		t.Fatal("first migration applied nothing")
	}
	if n := applied(); n != 0 {
		t.Fatalf("second migration applied %d, want 0", n)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var tables int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_tables
		WHERE tablename IN ('river_job', 'gb_users', 'gb_agent_research_runs')`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 3 {
		t.Fatalf("%d of River's and the project's tables found", tables)
	}
}
