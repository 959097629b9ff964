package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

func providersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "Show each model's shared breaker: closed, open or probing, its failures, probes and waiting runs (DATABASE_URL)",
		Long: `Every worker shares one breaker per model in Postgres. After transient failures in a
row (5xx, overloaded, unreachable) it opens: one probe call at a time goes out and the
other steps wait in the queue (state waiting_provider) until a probe is answered.`,
		Example: `  gb providers
  gb providers -o json`,
		Args: args(0, 0, "no arguments"),
	}
	o := addOutput(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := o.isJSON()
		if err != nil {
			return err
		}
		pool, err := openDB(cmd.Context())
		if err != nil {
			return err
		}
		defer pool.Close()
		br, err := jobs.Breakers(cmd.Context(), pool)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), br)
		}
		return printBreakers(cmd.OutOrStdout(), br)
	}
	return cmd
}

// printBreakers prints the breakers as a table.
func printBreakers(w io.Writer, br []jobs.Breaker) error {
	if len(br) == 0 {
		_, err := fmt.Fprintln(w, "no provider has failed yet: every breaker is closed")
		return err
	}
	t := newTable(w, "MODEL", "PROVIDER", "STATE", "FAILURES", "WAITING", "PROBES", "NEXT PROBE", "SINCE", "LAST ERROR")
	for _, b := range br {
		next, since := "-", "-"
		if b.NextProbe != nil {
			next = b.NextProbe.Local().Format("15:04:05")
		}
		if b.OpenedAt != nil {
			since = b.OpenedAt.Local().Format("15:04:05") + " (" + time.Since(*b.OpenedAt).Round(time.Second).String() + ")"
		}
		t.row(fit(b.Model, 32), b.Provider, b.State, strconv.Itoa(b.Failures), strconv.Itoa(b.Waiting),
			strconv.FormatInt(b.Probes, 10), next, since, fit(oneLine(b.LastError), 80))
	}
	return t.flush()
}

// providerWaitLine says what a run waiting for its provider waits for.
func providerWaitLine(w *jobs.ProviderWait) string {
	return fmt.Sprintf("%s %s down since %s (%s, %s): %s; next try %s", w.Provider, w.Model,
		w.Since.Local().Format("15:04:05"), time.Since(w.Since).Round(time.Second), tries(w.Tries),
		fit(oneLine(w.LastError), 100), w.NextTry.Local().Format("15:04:05"))
}

// printProviderWaits prints, for each waiting_provider event, that its
// run waits for its provider and when it tries again.
func printProviderWaits(w io.Writer, evs []jobs.Event) {
	for _, e := range evs {
		if e.Kind != jobs.EventWaitingProvider {
			continue
		}
		var d struct {
			Provider, Model, Error string
			NextTry                time.Time `json:"next_try"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			fmt.Fprintf(w, "[run %d waits for its provider: %s %s is down (%s); next try %s]\n", e.RunID, oneLine(d.Provider),
				oneLine(d.Model), fit(oneLine(d.Error), 100), d.NextTry.Local().Format("15:04:05"))
		}
	}
}

func tries(n int) string {
	if n == 1 {
		return "1 try"
	}
	return strconv.Itoa(n) + " tries"
}
