package main

import (
	"context"
	"errors"
	"fmt"
	"go/build"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// demoTopic has three independent parts, so the offline policy spawns a
// sub-agent for each.
const demoTopic = "How do goroutines and channels synchronize work, and how does the context package carry " +
	"cancellation and deadlines, and how does net/http serve HTTP requests?"

// cmdDemo sets everything up on this machine and runs one research: a
// local Postgres (infra/pg.sh) unless DATABASE_URL is set, the schema, the
// Go documentation dataset, a user key, the API and a worker; then it
// follows the research and prints its tree, report and messages.
func demoCmd() *cobra.Command {
	var topic string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Set up everything on this machine and run one research over the Go docs",
		Long: `Starts a local Postgres (infra/pg.sh) unless DATABASE_URL is set, applies the
schema, loads the Go documentation as the godoc dataset, creates a user key,
starts the API and a worker, then follows one research and prints its tree,
report and messages.`,
		Example: `  gb demo
  gb demo --topic "How does net/http serve requests?"`,
		Args: args(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.Context(), topic, cmd.OutOrStdout()) },
	}
	cmd.Flags().StringVar(&topic, "topic", demoTopic, "the question to research")
	return cmd
}

// runDemo sets everything up and runs one research on topic. It leaves
// nothing behind that would change the next demo: its API key is revoked
// when it ends (and expires in a day if the demo is killed first), and the
// notes its agents remember belong to its research, not to the dataset.
func runDemo(ctx context.Context, topic string, out io.Writer) (err error) {
	if os.Getenv("DATABASE_URL") == "" {
		fmt.Fprintln(out, "== starting a local Postgres (infra/pg.sh start)")
		cmd := exec.CommandContext(ctx, "infra/pg.sh", "start")
		cmd.Stderr = os.Stderr
		url, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("error starting Postgres with infra/pg.sh (run gb demo from the repository root): %w", err)
		}
		os.Setenv("DATABASE_URL", strings.TrimSpace(string(url)))
	}
	if os.Getenv("GB_OFFLINE_DELAY") == "" {
		// The offline model answers in microseconds; a short pause per call
		// lets the progress of each step show.
		os.Setenv("GB_OFFLINE_DELAY", "250ms")
	}
	logFile, err := os.CreateTemp("", "gb-demo-*.log")
	if err != nil {
		return fmt.Errorf("error creating log file: %w", err)
	}
	defer logFile.Close()
	fmt.Fprintf(out, "== migrating and starting the API and a worker (log: %s)\n", logFile.Name())
	s, err := startStack(ctx, newLogger(logFile), messengerPostgres)
	if err != nil {
		return err
	}
	defer s.stop()

	if err := loadGoDocs(ctx, s, out); err != nil {
		return err
	}
	key, revoke, err := demoKey(ctx, s.pool)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := revoke(); rerr != nil {
			err = errors.Join(err, rerr)
		} else {
			fmt.Fprintln(out, "\n== revoked the demo's API key")
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("error listening: %w", err)
	}
	srvCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	go func() { _ = s.serve(srvCtx, ln) }()
	os.Setenv("GB_API_URL", "http://"+ln.Addr().String())
	os.Setenv("GB_API_KEY", key)
	c, err := newAPIClient()
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "== gb research start %q --follow   (API %s)\n", topic, c.base)
	var run jobs.Run
	if err := c.do(ctx, "POST", "/v1/gb/research", map[string]any{"topic": topic}, &run); err != nil {
		return err
	}
	fmt.Fprintf(out, "run %d · model: %s\n", run.ID, run.Model)
	if err := followRun(ctx, c, run.ID, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== gb research tree %d\n", run.ID)
	if err := showTree(ctx, c, run.ID, false, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== gb research messages %d\n", run.ID)
	return showMessages(ctx, c, run.ID, false, out)
}

// The demo's user and the name of the key each demo makes for itself.
const (
	demoUser    = "demo"
	demoKeyName = "gb demo"
)

// demoKey makes the API key of one demo, for user demo: named demoKeyName
// and expiring in a day, so a demo killed before its end leaves a key that
// stops counting towards the user's bound by the next day. revoke revokes
// it, even when ctx is done.
func demoKey(ctx context.Context, db jobs.DB) (key string, revoke func() error, err error) {
	k, err := jobs.CreateUserKey(ctx, db, demoUser, jobs.KeyOptions{Name: demoKeyName, ExpiresInDays: 1})
	if err != nil {
		return "", nil, fmt.Errorf("error creating the demo's API key: %w", err)
	}
	uid, err := jobs.UserID(ctx, db, demoUser)
	if err != nil {
		return "", nil, err
	}
	revoke = func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := jobs.RevokeKey(rctx, db, uid, k.ID); err != nil {
			return fmt.Errorf("error revoking the demo's API key %d: %w", k.ID, err)
		}
		return nil
	}
	return k.Key, revoke, nil
}

// loadGoDocs loads the package documentation of the local Go toolchain as
// the godoc dataset: every package is read again, and only those whose
// documentation changed (or was cut into passages another way) are
// written.
func loadGoDocs(ctx context.Context, s *stack, out io.Writer) error {
	root := build.Default.GOROOT
	if b, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output(); err == nil {
		root = strings.TrimSpace(string(b))
	}
	src := filepath.Join(root, "src")
	fmt.Fprintf(out, "== gb kb load %s %s   (package docs extracted with go/doc)\n", jobs.DefaultDataset, src)
	docs, err := kb.FromPaths([]string{src})
	if err != nil {
		return err
	}
	stats, err := kb.Sync(ctx, s.pool, jobs.DefaultDataset, docs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s\n", stats)
	return nil
}
