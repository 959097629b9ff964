package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
)

// liveDemoKeys counts the demo user's keys that are neither revoked nor
// expired: what counts towards jobs.MaxKeysPerUser.
func liveDemoKeys(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM gb_api_keys k JOIN gb_users u ON u.id = k.user_id
		WHERE u.name = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`, demoUser).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The demo's key path 120 times in a row, more than jobs.MaxKeysPerUser:
// each key works while its demo runs and is refused once revoked, and the
// demo user's live keys are as many after as before.
func TestDemoKeyPathRepeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	// The user exists with a key of their own, which the demos leave alone.
	own, err := jobs.CreateKey(ctx, pool, demoUser)
	if err != nil {
		t.Fatal(err)
	}
	before := liveDemoKeys(t, pool)
	start := time.Now()
	const runs = 120
	for i := range runs {
		key, revoke, err := demoKey(ctx, pool)
		if err != nil {
			t.Fatalf("demo %d: %v", i+1, err)
		}
		if _, err := jobs.Authenticate(ctx, pool, key); err != nil {
			t.Fatalf("demo %d: its key does not work: %v", i+1, err)
		}
		if err := revoke(); err != nil {
			t.Fatalf("demo %d: %v", i+1, err)
		}
		if _, err := jobs.Authenticate(ctx, pool, key); !errors.Is(err, jobs.ErrKeyRevoked) {
			t.Fatalf("demo %d: its key works after the demo: %v", i+1, err)
		}
	}
	if after := liveDemoKeys(t, pool); after != before {
		t.Errorf("the demo user has %d live keys after %d demos, %d before", after, runs, before)
	}
	if _, err := jobs.Authenticate(ctx, pool, own); err != nil {
		t.Errorf("the user's own key: %v", err)
	}
	var expiring int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM gb_api_keys WHERE name = $1 AND expires_at <= now() + interval '1 day'`,
		demoKeyName).Scan(&expiring); err != nil || expiring != runs {
		t.Errorf("%d of %d demo keys expire within a day (%v)", expiring, runs, err)
	}
	t.Logf("%d demo key paths in %s", runs, time.Since(start))
}

// TestDemoRunsAgainLeavingNothing runs the whole demo (Postgres given,
// the Go documentation loaded, the API, a worker and one research
// followed to its end) three times on one database, or GB_DEMO_RUNS times
// (120 shows a run of demos past jobs.MaxKeysPerUser; each takes some 3
// seconds): the count of the godoc dataset's documents and of the demo
// user's live keys is the same after each, while each research's notes
// stay in its tree.
func TestDemoRunsAgainLeavingNothing(t *testing.T) {
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	t.Setenv("GB_OFFLINE_DELAY", "1ms")
	t.Setenv("GB_API_URL", "")
	t.Setenv("GB_API_KEY", "")
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	docs := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM gb_kb_documents WHERE dataset = $1", jobs.DefaultDataset).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	firstDocs, firstKeys := -1, -1
	runs := 3
	if v := os.Getenv("GB_DEMO_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("GB_DEMO_RUNS=%q: want a number of runs, 1 or more", v)
		}
		runs = n
	}
	began := time.Now()
	for i := range runs {
		start := time.Now()
		var out strings.Builder
		if err := runDemo(ctx, "How do goroutines and channels synchronize work?", io.MultiWriter(&out)); err != nil {
			t.Fatalf("demo %d: %v\n%s", i+1, err, out.String())
		}
		if !strings.Contains(out.String(), "== revoked the demo's API key") {
			t.Errorf("demo %d did not say it revoked its key:\n%s", i+1, out.String())
		}
		d, k := docs(), liveDemoKeys(t, pool)
		t.Logf("demo %d: %s, %d godoc documents, %d live demo keys", i+1, time.Since(start).Round(time.Millisecond), d, k)
		if i == 0 {
			firstDocs, firstKeys = d, k
			continue
		}
		if d != firstDocs || k != firstKeys {
			t.Errorf("after demo %d: %d documents and %d live keys; after the first, %d and %d", i+1, d, k, firstDocs, firstKeys)
		}
	}
	var notes, trees int
	if err := pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT tree_id) FROM gb_kb_documents WHERE tree_id IS NOT NULL").Scan(&notes, &trees); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d demos in %s; their notes: %d, in %d trees", runs, time.Since(began).Round(time.Millisecond), notes, trees)
	if trees != runs {
		t.Errorf("the notes of %d demos are in %d trees, want one each", runs, trees)
	}
	if firstKeys != 0 {
		t.Errorf("a demo left %d live keys", firstKeys)
	}
}
