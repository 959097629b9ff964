package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/jobs/providerbench"
)

func benchProviderCmd() *cobra.Command {
	var o providerbench.SuiteOptions
	var limits []string
	c := &cobra.Command{
		Use:   "provider",
		Short: "Run research trees against a fake provider with real limits and print what they cost",
		Long: `Run research trees on DATABASE_URL against the project's OpenAI-compatible fake
provider, which enforces a context window, requests and tokens per minute with
OpenAI's 429s and headers, reports cached prompt tokens and bills every call it
answers. It prints:

  - a long research that reads a new 20,000-character page at every step, with
    compaction at a 128k and a 16k window, beside the same research with
    compaction off (the baseline): prompt tokens, cached tokens and cost;
  - trees of a root and three sub-agents started at once against each rate
    limit: runs that succeeded, 429s, throughput as a share of the binding
    limit, and how many step jobs ran at once;
  - a tree of four sub-agents racing for a dollar budget;
and, for each, whether gb's ledger matched the provider's bill call by call.

With --provider bedrock the scenarios run on the project's Converse fake
instead, through the Bedrock client and the AWS SDK (SigV4-signed, Converse's
ThrottlingException, cache reads and writes at Bedrock's prices), with the
quotas configured as GB_RATE_LIMITS would state them.

Run it on a database of its own: the scenarios use the default queue.`,
		Example: `  gb bench provider
  gb bench provider --long 40 --trees 30 --limits 60/40000,40/0 --cost 0.01
  gb bench provider --long 0 --trees 6 --limits 30/0
  gb bench provider --provider bedrock --long 10 --trees 10 --limits 60/0`,
		Args: args(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ProviderName != providerbench.ProviderOpenAI && o.ProviderName != providerbench.ProviderBedrock {
				return usageErrorf("--provider %q: want openai or bedrock", o.ProviderName)
			}
			for _, s := range limits {
				l, err := parseLimit(s)
				if err != nil {
					return usageErrorf("--limits %q: %w", s, err)
				}
				o.Limits = append(o.Limits, l)
			}
			pool, err := openDB(cmd.Context())
			if err != nil {
				return err
			}
			defer pool.Close()
			if _, err := db.Migrate(cmd.Context(), pool, slog.New(slog.DiscardHandler)); err != nil {
				return err
			}
			o.Pool = pool
			o.Workers = 2
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
			o.Progress = func(s string) { fmt.Fprintf(cmd.ErrOrStderr(), "gb bench provider: %s\n", printable(s)) }
			r, err := providerbench.Suite(cmd.Context(), o)
			if err != nil {
				return err
			}
			return r.Print(cmd.OutOrStdout())
		},
	}
	f := c.Flags()
	f.StringVar(&o.ProviderName, "provider", providerbench.ProviderOpenAI, "fake provider: openai (chat completions) or bedrock (Converse)")
	f.IntVar(&o.Long, "long", 40, "steps of the long research (0 skips it)")
	f.IntVar(&o.Trees, "trees", 30, "trees started at once against each rate limit (0 skips them)")
	f.StringSliceVar(&limits, "limits", []string{"60/40000", "40/0"}, "rate limits the trees meet, each RPM/TPM (0: none)")
	f.Float64Var(&o.CostUSD, "cost", 0.01, "dollar budget of the tree of racing sub-agents (0 skips it)")
	return c
}

// parseLimit reads RPM/TPM.
func parseLimit(s string) (providerbench.RateLimit, error) {
	r, t, ok := strings.Cut(s, "/")
	rpm, err1 := strconv.Atoi(r)
	tpm, err2 := strconv.Atoi(t)
	if !ok || err1 != nil || err2 != nil || rpm < 0 || tpm < 0 || rpm+tpm == 0 {
		return providerbench.RateLimit{}, fmt.Errorf("want requests/tokens per minute such as 60/40000 (0 for none, not both)")
	}
	return providerbench.RateLimit{RPM: rpm, TPM: tpm}, nil
}
