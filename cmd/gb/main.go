// Command gb is the command line of the research service: it starts a
// local stack (gb dev), runs researches over the REST API, serves the API
// to MCP clients (gb mcp), and does the admin work that needs the database
// (migrate, keys, knowledge base).
//
// It follows the conventions of gh and kubectl: every command answers
// --help, read commands take -o json|table, and the exit code says what
// went wrong (see the exit* constants).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// Exit codes of gb.
const (
	exitOK = 0
	// exitError is any failure that is not one of the others.
	exitError = 1
	// exitUsage is a command line gb cannot run: an unknown command or
	// flag, a missing or extra argument, a bad flag value.
	exitUsage = 2
	// exitAuth means there is no API key, or the API refused it.
	exitAuth = 4
	// exitInterrupted means Ctrl-C (SIGINT) stopped the command.
	exitInterrupted = 130
	// exitTerminated means SIGTERM stopped the command (128 + 15, as a
	// shell reports it).
	exitTerminated = 143
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value // the os.Signal that stopped gb
	go func() {
		s := <-sigs
		got.Store(s)
		cancel()
	}()
	err := run(ctx, os.Args[1:], os.Stdout)
	signal.Stop(sigs)
	sig, _ := got.Load().(os.Signal)
	code := exitCode(err, sig != nil)
	if code == exitInterrupted {
		code = signalCode(sig)
	}
	if err != nil && code != exitInterrupted && code != exitTerminated {
		fmt.Fprintln(os.Stderr, "gb: "+printable(err.Error()))
	}
	os.Exit(code)
}

// signalCode is the exit code of a command stopped by sig: 143 for SIGTERM,
// else 130 (Ctrl-C).
func signalCode(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return exitTerminated
	}
	return exitInterrupted
}

// run runs the gb command line args, writing to out; its error says how
// gb should exit (exitCode).
func run(ctx context.Context, args []string, out io.Writer) error {
	return runWith(ctx, args, out, os.Stderr)
}

func runWith(ctx context.Context, args []string, out, errOut io.Writer) error {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetContext(ctx)
	_, err := root.ExecuteC()
	return classify(err)
}

// exitCode maps the error of run to the process's exit code.
func exitCode(err error, interrupted bool) int {
	var ce *codedError
	switch {
	case err == nil:
		return exitOK
	case interrupted && errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &ce):
		return ce.code
	}
	return exitError
}
