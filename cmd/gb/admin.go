package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// openDB opens the pool of DATABASE_URL for the admin commands.
func openDB(ctx context.Context) (*pgxpool.Pool, error) {
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		return nil, fmt.Errorf("DATABASE_URL is not set; for a local database run: export DATABASE_URL=$(infra/pg.sh start)")
	}
	return db.Open(ctx, db.PoolConfig{URL: u})
}

func cmdMigrate(ctx context.Context, args []string, out io.Writer) error {
	if _, err := parseArgs(flag.NewFlagSet("migrate", flag.ContinueOnError), args, 0, 0, ""); err != nil {
		return err
	}
	pool, err := openDB(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := db.Migrate(ctx, pool, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "database is up to date (%d migrations applied now)\n", n)
	return nil
}

func cmdKeys(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return fmt.Errorf("usage: gb keys create --user NAME")
	}
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	user := fs.String("user", "", "the user who owns the key")
	if _, err := parseArgs(fs, args[1:], 0, 0, "--user NAME"); err != nil {
		return err
	}
	if *user == "" {
		return fmt.Errorf("usage: gb keys create --user NAME")
	}
	pool, err := openDB(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	key, err := jobs.CreateKey(ctx, pool, *user)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s\n", key)
	fmt.Fprintf(os.Stderr, "API key for %s printed above; it is shown once and stored only as a hash.\n", *user)
	return nil
}

func cmdKB(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "load" {
		return fmt.Errorf("usage: gb kb load DATASET PATH...")
	}
	pos, err := parseArgs(flag.NewFlagSet("kb load", flag.ContinueOnError), args[1:], 2, -1, "DATASET PATH...")
	if err != nil {
		return err
	}
	docs, err := kb.FromPaths(pos[1:])
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return fmt.Errorf("no documents found in %v (loadable: .md and .txt files, Go package directories)", pos[1:])
	}
	pool, err := openDB(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := kb.Load(ctx, pool, pos[0], docs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "loaded %d documents into dataset %q\n", n, pos[0])
	return nil
}
