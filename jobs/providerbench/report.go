package providerbench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// SuiteOptions say which scenarios Suite runs and at what size.
type SuiteOptions struct {
	EnvOptions
	// Long is the max_steps of the long research (0 skips it).
	Long int
	// Trees is how many trees meet each rate limit (0 skips them).
	Trees int
	// Limits are the rate limits the trees meet, each a run of its own.
	Limits []RateLimit
	// CostUSD is the budget of the cost tree (0 skips it).
	CostUSD float64
	// Progress, when set, is told what runs.
	Progress func(string)
}

// RateLimit is one set of provider limits per minute (0: none).
type RateLimit struct{ RPM, TPM int }

// Report is what Suite measured.
type Report struct {
	// Provider and Model are what the scenarios ran on.
	Provider, Model string
	Long            []LongRow
	Rates           []RateRow
	Cost            *CostResult
	Took            time.Duration
}

// LongRow is one long research.
type LongRow struct {
	Name string
	LongResult
}

// RateRow is the trees against one limit.
type RateRow struct {
	Limit RateLimit
	RateResult
}

// Suite runs the scenarios, one after the other, on o's database.
func Suite(ctx context.Context, o SuiteOptions) (Report, error) {
	began := time.Now()
	say := func(format string, args ...any) {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf(format, args...))
		}
	}
	r := Report{Provider: cmp.Or(o.ProviderName, ProviderOpenAI), Model: o.Model}
	if r.Model == "" {
		r.Model = map[string]string{ProviderOpenAI: ModelDefault, ProviderBedrock: BedrockModelDefault}[r.Provider]
	}
	if o.Long > 0 {
		for _, c := range []struct {
			name   string
			window int
			off    bool
		}{{"no compaction (baseline)", 0, true}, {"128k window", 128_000, false}, {"16k window", 16_000, false}} {
			say("long research, %d steps: %s", o.Long, c.name)
			res, err := LongResearch(ctx, LongOptions{EnvOptions: o.EnvOptions, Steps: o.Long, Window: c.window, NoCompaction: c.off})
			if err != nil {
				return r, err
			}
			r.Long = append(r.Long, LongRow{c.name, res})
		}
	}
	if o.Trees > 0 {
		for _, l := range o.Limits {
			say("%d trees against %d RPM / %d TPM", o.Trees, l.RPM, l.TPM)
			eo := o.EnvOptions
			if r.Provider == ProviderBedrock && eo.Agent.RateLimits == nil {
				// Bedrock says nothing of its quotas in its answers: they are
				// configured, as GB_RATE_LIMITS does from Service Quotas.
				eo.Agent.RateLimits = map[string]jobs.RateLimit{r.Model: {RPM: l.RPM, TPM: l.TPM}}
			}
			res, err := RateLimits(ctx, RateOptions{EnvOptions: eo, Trees: o.Trees, RPM: l.RPM, TPM: l.TPM})
			if err != nil {
				return r, err
			}
			r.Rates = append(r.Rates, RateRow{l, res})
		}
	}
	if o.CostUSD > 0 {
		say("a tree of four racing sub-agents with $%g", o.CostUSD)
		res, err := CostTree(ctx, CostOptions{EnvOptions: o.EnvOptions, MaxCostUSD: o.CostUSD})
		if err != nil {
			return r, err
		}
		r.Cost = &res
	}
	r.Took = time.Since(began)
	return r, nil
}

// Print writes the report as tables.
func (r Report) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(r.Long) > 0 {
		base := r.Long[0]
		fmt.Fprintln(tw, "LONG RESEARCH\tstatus\tsteps\tcited\tpage tokens\tprompt tokens\t× read\t× baseline\tcached\tlargest prompt\tover window\tcost\t× baseline\tledger")
		for _, l := range r.Long {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.1f\t%.2f\t%d\t%d\t%d\t$%.4f\t%.2f\t%s\n", l.Name, l.Status, l.Steps, l.Cited,
				l.PageTokens, l.Provider.PromptTokens, ratio(l.Provider.PromptTokens, l.PageTokens),
				ratio(l.Provider.PromptTokens, base.Provider.PromptTokens), l.Provider.CachedTokens, l.MaxPrompt,
				l.Provider.OverWindow, l.Provider.CostUSD, l.Provider.CostUSD/base.Provider.CostUSD, matches(l.Ledger))
		}
		fmt.Fprintln(tw)
	}
	if len(r.Rates) > 0 {
		fmt.Fprintln(tw, "RATE LIMITS\ttrees\truns ok\trequests\t429s\t429 share\tthroughput\tjobs running: mean\tpeak\tpeak at provider\telapsed\tledger")
		for _, x := range r.Rates {
			fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%d\t%d\t%.1f%%\t%.0f%% of %s\t%.1f\t%d\t%d\t%s\t%s\n", limitName(x.Limit), x.Runs/4,
				x.Succeeded, x.Runs, x.Provider.Requests, x.Refused, 100*x.Share, 100*x.Throughput, x.Binding,
				x.MeanRunning, x.PeakRunning, x.PeakInFlight, x.Elapsed.Round(time.Second), matches(x.Ledger))
		}
		fmt.Fprintln(tw)
	}
	if c := r.Cost; c != nil {
		fmt.Fprintln(tw, "DOLLAR BUDGET\troot\treport\tspent\tlargest call estimate\tsub-agents\tledger")
		fmt.Fprintf(tw, "4 racing sub-agents\t%s\t%v\t$%.6f\t$%.6f\t%s\t%s\n", c.RootStatus, c.RootReport, c.CostUSD,
			c.MaxCallEstimateUSD, countStatuses(c.Runs), matches(c.Ledger))
		fmt.Fprintln(tw)
	}
	provider := "the project's OpenAI-compatible fake (infra/openai/openaifake)"
	if r.Provider == ProviderBedrock {
		provider = "the project's Converse fake (infra/bedrock/conversefake) through the AWS SDK, with the quotas configured " +
			"(GB_RATE_LIMITS)"
	}
	fmt.Fprintf(tw, "took %s. Provider: %s, %s's prices;\n"+
		"throughput is what the provider accepted over what its binding limit allowed from its first to its last\n"+
		"accepted call (a minute's capacity at once, then the limit's rate); ledger: gb's ledger matched to the\n"+
		"provider's bill call by call.\n", r.Took.Round(time.Second), provider, r.Model)
	return tw.Flush()
}

// countStatuses sums up runs described as "name status error": how many
// ended with each status.
func countStatuses(runs []string) string {
	n := map[string]int{}
	var order []string
	for _, r := range runs {
		f := strings.Fields(r)
		if len(f) < 2 {
			continue
		}
		if n[f[1]] == 0 {
			order = append(order, f[1])
		}
		n[f[1]]++
	}
	var parts []string
	for _, s := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
	}
	return strings.Join(parts, ", ")
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func limitName(l RateLimit) string {
	switch {
	case l.TPM == 0:
		return fmt.Sprintf("%d RPM", l.RPM)
	case l.RPM == 0:
		return fmt.Sprintf("%d TPM", l.TPM)
	}
	return fmt.Sprintf("%d RPM / %d TPM", l.RPM, l.TPM)
}

// matches says whether the ledger matched the provider's bill.
func matches(l Ledger) string {
	if len(l.Mismatches) > 0 {
		return fmt.Sprintf("%d mismatches", len(l.Mismatches))
	}
	return fmt.Sprintf("= bill (%d calls)", l.Billed)
}
