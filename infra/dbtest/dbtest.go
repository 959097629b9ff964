// Package dbtest gives each test a database of its own, created from a
// migrated template on the Postgres named by DATABASE_URL (infra/pg.sh start).
//
// Without DATABASE_URL a test is skipped, except under CI=true, where a
// missing database is a failure. It may import infra/db and migrations only.
package dbtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/migrations"
)

const templateName = "gb_test_template"

var (
	templateOnce sync.Once
	templateErr  error
)

// URL returns DATABASE_URL, skipping the test when it is unset outside CI and
// failing it under CI=true.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DATABASE_URL is not set under CI=true: start Postgres with infra/pg.sh start")
		}
		t.Skip("DATABASE_URL not set; run infra/pg.sh start and export its output")
	}
	return u
}

// NewURL creates a fresh migrated database for this test, dropped when the
// test ends, and returns its URL.
func NewURL(t testing.TB) string {
	t.Helper()
	base := URL(t)
	ctx := context.Background()
	templateOnce.Do(func() { templateErr = ensureTemplate(ctx, base) })
	if templateErr != nil {
		t.Fatalf("preparing template database: %v", templateErr)
	}
	name := "gb_test_" + randHex(6)
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to %s: %v", redact(base), err)
	}
	defer admin.Close(ctx)
	if err := createFromTemplate(ctx, admin, name); err != nil {
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
	return withDB(base, name)
}

// NewPool creates a fresh migrated database and a pool on it, closed when
// the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := NewURL(t)
	pool, err := db.Open(context.Background(), db.PoolConfig{URL: u, MaxConns: 40})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// createFromTemplate copies the template; Postgres refuses a copy while
// another session is connected to the template, so it retries briefly.
func createFromTemplate(ctx context.Context, admin *pgx.Conn, name string) error {
	var err error
	for i := 0; i < 50; i++ {
		_, err = admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+templateName)
		if err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("creating test database %s: %w", name, err)
}

// ensureTemplate builds the template database once per Postgres cluster;
// an advisory lock keeps parallel test binaries from racing on it.
func ensureTemplate(ctx context.Context, base string) error {
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", redact(base), err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(7411000002)"); err != nil {
		return fmt.Errorf("taking template lock: %w", err)
	}
	defer func() { _, _ = admin.Exec(ctx, "SELECT pg_advisory_unlock(7411000002)") }()

	// Rebuild only when the migrations changed since the template was made:
	// the template's comment holds a digest of them.
	digest, err := migrationsDigest()
	if err != nil {
		return err
	}
	var have string
	_ = admin.QueryRow(ctx, `SELECT coalesce(shobj_description(oid, 'pg_database'), '')
		FROM pg_database WHERE datname = $1`, templateName).Scan(&have)
	if have == digest {
		return nil
	}
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+templateName+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("dropping old template: %w", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+templateName); err != nil {
		return fmt.Errorf("creating template: %w", err)
	}
	pool, err := db.Open(ctx, db.PoolConfig{URL: withDB(base, templateName), MaxConns: 4})
	if err != nil {
		return err
	}
	_, err = db.Migrate(ctx, pool, nil)
	pool.Close()
	if err != nil {
		return fmt.Errorf("migrating template: %w", err)
	}
	if _, err := admin.Exec(ctx, "COMMENT ON DATABASE "+templateName+" IS '"+digest+"'"); err != nil {
		return fmt.Errorf("marking template: %w", err)
	}
	return nil
}

// migrationsDigest hashes every embedded migration file.
func migrationsDigest() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := migrations.FS.ReadFile(path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hashing migrations: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func withDB(base, name string) string {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		return base + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the database"
	}
	return u.Redacted()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
