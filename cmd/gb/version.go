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

// versionInfo is what gb version -o json prints.
type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
}

func versionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version and commit of gb",
		Example: "  gb version\n  gb version -o json | jq -r .commit",
		Args:    args(0, 0, "no arguments"),
	}
	o := addOutput(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := o.isJSON()
		if err != nil {
			return err
		}
		v := versionInfo{Version: cmp.Or(version, "dev"), Commit: buildCommit(), Go: runtime.Version()}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), v)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "gb %s (commit %s, %s)\n", v.Version, v.Commit, v.Go)
		return nil
	}
	return cmd
}
