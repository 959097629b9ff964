package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// codedError is an error with the exit code it calls for.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// usageErrorf is a command line gb cannot run (exit 2).
func usageErrorf(format string, args ...any) error {
	return &codedError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// authError is a missing or refused API key (exit 4).
func authError(err error) error { return &codedError{code: exitAuth, err: err} }

// classify turns cobra's own errors, which are plain, into usage errors.
func classify(err error) error {
	var ce *codedError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "invalid argument",
		"flag needs an argument", "required flag", "accepts ", "requires at least", "bad flag syntax"} {
		if strings.HasPrefix(msg, p) {
			return &codedError{code: exitUsage, err: err}
		}
	}
	return err
}

// args checks that a command gets from min to max positional arguments
// (max < 0: no limit), naming them in the error.
func args(min, max int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) < min || (max >= 0 && len(a) > max) {
			return usageErrorf("%s takes %s (got %d argument%s); see %s --help",
				cmd.CommandPath(), names, len(a), plural(len(a)), cmd.CommandPath())
		}
		return nil
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// runID checks that s is a run id.
func runID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usageErrorf("%q is not a run id (a positive integer)", s)
	}
	return id, nil
}

// group is a command that only holds subcommands: alone it prints its help;
// with an unknown subcommand it is a usage error.
func group(use, short, example string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 0 {
				return cmd.Help()
			}
			names := make([]string, 0, len(subs))
			for _, s := range subs {
				names = append(names, s.Name())
			}
			return usageErrorf("unknown %s command %q%s; use one of %s (see %s --help)",
				cmd.CommandPath(), a[0], didYouMean(cmd, a[0]), strings.Join(names, ", "), cmd.CommandPath())
		},
	}
	c.AddCommand(subs...)
	return c
}
