package main

import (
	"strings"

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
130 interrupted (Ctrl-C), 143 terminated (SIGTERM).`,
		Example: `  gb demo
  export GB_API_KEY=$(gb keys create --user alice)
  gb dev &
  gb research start "How does sync.WaitGroup work?" --follow
  gb research list -o json`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noCommand,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf("%w; see %s --help", err, cmd.CommandPath())
	})
	root.AddCommand(demoCmd(), devCmd(), workerCmd(), researchCmd(), webhooksCmd(), keysCmd(), usersCmd(), kbCmd(), migrateCmd(), providersCmd(),
		mcpCmd(), benchCmd(), evalCmd(), versionCmd())
	addCompletions(root)
	return root
}

// noCommand is the root's check of its arguments: gb takes none, so a word
// is a command gb does not have, and the error names the commands it is
// close to. (cobra.NoArgs would say "unknown command" without them: cobra
// suggests only for a root with no Args of its own.)
func noCommand(cmd *cobra.Command, a []string) error {
	if len(a) == 0 {
		return nil
	}
	return usageErrorf("unknown command %q for %q%s; see %s --help", a[0], cmd.CommandPath(), didYouMean(cmd, a[0]), cmd.CommandPath())
}

// didYouMean is " (did you mean research?)" naming the subcommands of cmd
// close to typed (cobra's distance and prefix rules), or "".
func didYouMean(cmd *cobra.Command, typed string) string {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only on its own path
	}
	s := cmd.SuggestionsFor(typed)
	if len(s) == 0 {
		return ""
	}
	return " (did you mean " + strings.Join(s, " or ") + "?)"
}
