package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the gb command tree. Cobra gives every command --help
// and -h, gb help COMMAND, and shell completions (gb completion bash).
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "gb",
		Short: "Research agents on Postgres",
		Long: `gb: research agents on Postgres.

The research commands talk to GB_API_URL (default http://127.0.0.1:8080) with
GB_API_KEY; migrate, kb and keys --user use DATABASE_URL.

Exit codes: 0 success, 1 error, 2 usage error, 4 not authenticated,
130 interrupted.`,
		Example: `  gb demo
  export GB_API_KEY=$(gb keys create --user alice)
  gb dev &
  gb research start "How does sync.WaitGroup work?" --follow
  gb research list -o json`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf("%w; see %s --help", err, cmd.CommandPath())
	})
	root.AddCommand(demoCmd(), devCmd(), workerCmd(), researchCmd(), webhooksCmd(), keysCmd(), usersCmd(), kbCmd(), migrateCmd(), providersCmd(),
		mcpCmd(), benchCmd(), evalCmd(), versionCmd())
	return root
}
