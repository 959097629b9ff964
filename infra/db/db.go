// Package db opens the Postgres pool the functions and the CLI share and
// applies the schema: the project's migrations through goose and River's
// through rivermigrate.
//
// Its pool traces each statement run under a recording span as a client
// span of the database conventions (tracer.go).
//
// It may import migrations and nothing else of the project.
package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/gbresearch/gb/migrations"
)

// PoolConfig says how to open a pool.
type PoolConfig struct {
	// URL is a libpq connection string or URL. Required.
	URL string
	// MaxConns bounds the pool; 0 means MaxConnsDefault.
	MaxConns int32
	// Proxy selects the exec query mode, which keeps no prepared statements
	// or other session state, as RDS Proxy and PgBouncer need.
	Proxy bool
	// BeforeConnect, when set, can change each new connection's settings,
	// for example to put a fresh IAM auth token in its password.
	BeforeConnect func(context.Context, *pgx.ConnConfig) error
}

// migrateLockKey is the advisory lock key Migrate holds while it works.
const migrateLockKey = 7_411_000_001

// MaxConnsDefault is the pool size when PoolConfig.MaxConns is 0.
const MaxConnsDefault = 20

// ConnectTimeoutDefault bounds the making of one connection when the URL
// sets no connect_timeout, so that an unreachable server fails requests
// rather than hanging them.
const ConnectTimeoutDefault = 10 * time.Second

// Open creates a pool and checks that the database answers.
func Open(ctx context.Context, cfg PoolConfig) (*pgxpool.Pool, error) {
	if cfg.URL == "" {
		return nil, errors.New("database URL is empty: set DATABASE_URL (for example from infra/pg.sh start)")
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("error parsing database URL: %w", err)
	}
	pc.MaxConns = MaxConnsDefault
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	pc.MaxConnIdleTime = time.Minute
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = ConnectTimeoutDefault
	}
	if cfg.Proxy {
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	pc.ConnConfig.Tracer = &queryTracer{} // spans only under a recording span (tracer.go)
	if cfg.BeforeConnect != nil {
		pc.BeforeConnect = cfg.BeforeConnect
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("error creating pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error connecting to database: %w", err)
	}
	return pool, nil
}

// Migrate applies River's migrations and then the project's, and is
// idempotent: a second call changes nothing. It returns how many of the
// project's migrations it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (int, error) {
	// One migrator at a time: a session advisory lock held on its own
	// connection serializes concurrent deploys and test set-ups.
	lockConn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("error acquiring connection for migration lock: %w", err)
	}
	defer lockConn.Release()
	if _, err := lockConn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return 0, fmt.Errorf("error taking migration lock: %w", err)
	}
	defer func() {
		_, _ = lockConn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockKey)
	}()

	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return 0, fmt.Errorf("error creating river migrator: %w", err)
	}
	rres, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return 0, fmt.Errorf("error applying river migrations: %w", err)
	}
	if logger != nil && len(rres.Versions) > 0 {
		logger.InfoContext(ctx, "applied river migrations", "count", len(rres.Versions))
	}

	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	if err != nil {
		return 0, fmt.Errorf("error creating migration provider: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("error applying migrations: %w", err)
	}
	if logger != nil && len(results) > 0 {
		logger.InfoContext(ctx, "applied migrations", "count", len(results))
	}
	return len(results), nil
}

// SchemaVersions returns the newest of the project's migrations applied to
// the database (0 when none is) and the newest this binary holds: a
// database whose current is below latest has not been migrated for this
// version yet. It only reads, so it can serve a readiness check.
func SchemaVersions(ctx context.Context, pool *pgxpool.Pool) (current, latest int64, err error) {
	latest, err = latestMigration()
	if err != nil {
		return 0, 0, err
	}
	var table *string
	if err := pool.QueryRow(ctx, "SELECT to_regclass('goose_db_version')::text").Scan(&table); err != nil {
		return 0, 0, fmt.Errorf("error looking for the schema's version table: %w", err)
	}
	if table == nil {
		return 0, latest, nil
	}
	if err := pool.QueryRow(ctx, "SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied").Scan(&current); err != nil {
		return 0, 0, fmt.Errorf("error reading the schema's version: %w", err)
	}
	return current, latest, nil
}

// latestMigration is the version of the newest migration file embedded in
// the binary (the number its name starts with).
func latestMigration() (int64, error) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return 0, fmt.Errorf("error listing the migrations: %w", err)
	}
	var latest int64
	for _, n := range names {
		digits, _, _ := strings.Cut(n, "_")
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("migration %s: its name does not start with a version number: %w", n, err)
		}
		latest = max(latest, v)
	}
	return latest, nil
}
