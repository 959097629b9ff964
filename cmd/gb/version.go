package main

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set at build time with
// -ldflags "-X main.version=v1.2.3 -X main.commit=abc123"; otherwise the
// commit comes from the build's VCS information when there is some.
var (
	version = "dev"
	commit  = ""
)

// buildCommit is the commit gb was built from, or "unknown".
func buildCommit() string {
	if commit != "" {
		return commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version and commit of gb",
		Example: "  gb version",
		Args:    args(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "gb %s (commit %s, %s)\n", cmp.Or(version, "dev"), buildCommit(), runtime.Version())
			return nil
		},
	}
}
