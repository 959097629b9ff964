// Command gb is the command line of the research service: it starts a
// local stack (gb dev), runs researches over the REST API, and does the
// admin work that needs the database (migrate, keys, knowledge base).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `gb: research agents on Postgres

Usage:
  gb demo                                  set up everything and run a research on the Go docs
  gb dev [--addr 127.0.0.1:8080]           migrate, then serve the API and run a worker
  gb worker                                run a worker only
  gb research start TOPIC [--follow] [--max-steps N] [--dataset NAME] [--max-cost-usd X] [--max-tokens N]
  gb research list [--status S] [--parent ID] [--limit N] [--cursor C]
  gb research get ID
  gb research tree ID [--follow]
  gb research events ID [--after SEQ]
  gb research messages ID
  gb research send ID TEXT                 message a working agent as its owner
  gb research cancel ID
  gb research delete ID
  gb keys create --user NAME               (DATABASE_URL)
  gb kb load DATASET PATH...               (DATABASE_URL) documents, or Go source trees
  gb migrate                               (DATABASE_URL)

The research commands talk to GB_API_URL (default http://127.0.0.1:8080) with GB_API_KEY.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "gb: "+err.Error())
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(out, usage)
		return errors.New("no command given")
	}
	rest := args[1:]
	switch args[0] {
	case "demo":
		return cmdDemo(ctx, rest, out)
	case "dev":
		return cmdDev(ctx, rest, out)
	case "worker":
		return cmdWorker(ctx, rest, out)
	case "research":
		return cmdResearch(ctx, rest, out)
	case "keys":
		return cmdKeys(ctx, rest, out)
	case "kb":
		return cmdKB(ctx, rest, out)
	case "migrate":
		return cmdMigrate(ctx, rest, out)
	case "help", "-h", "--help":
		fmt.Fprint(out, usage)
		return nil
	default:
		return fmt.Errorf("unknown command %q; run gb help", args[0])
	}
}

// parseArgs parses flags that may come before, between or after the
// positional arguments, and checks how many positionals there are.
func parseArgs(fs *flag.FlagSet, args []string, minPos, maxPos int, what string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%s: %w", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) < minPos || (maxPos >= 0 && len(pos) > maxPos) {
		return nil, fmt.Errorf("usage: gb %s %s", fs.Name(), what)
	}
	return pos, nil
}
