package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

// This file holds gb webhooks (the caller's default webhook URL and
// signing secret) and gb research webhooks ID (a research's deliveries),
// over the REST API; webhooks_listen.go holds a local receiver.

func webhooksCmd() *cobra.Command {
	secret := group("secret", "Show or rotate the secret that signs your webhooks", `  gb webhooks secret show
  gb webhooks secret rotate`, webhooksSecretShowCmd(), webhooksSecretRotateCmd())
	return group("webhooks", "Your webhooks: the default URL told when a research ends, and the signing secret",
		`  gb webhooks listen --addr 127.0.0.1:9000 &   # a local receiver (GB_FETCH_ALLOW=127.0.0.1/32:9000 on the API)
  gb webhooks set http://127.0.0.1:9000/
  gb webhooks show
  gb webhooks secret rotate
  gb research webhooks 1`,
		webhooksShowCmd(), webhooksSetCmd(), webhooksUnsetCmd(), webhooksListenCmd(), secret)
}

func webhooksShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "show",
		Short:   "Show your default webhook URL and the events gb sends",
		Example: `  gb webhooks show -o json`,
		Args:    args(0, 0, "no arguments"),
	}
	o := addOutput(cmd)
	cmd.RunE = withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, _ []string) error {
		asJSON, err := o.isJSON()
		if err != nil {
			return err
		}
		var s jobs.WebhookSettings
		if err := c.do(ctx, "GET", "/v1/gb/webhooks", nil, &s); err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), s)
		}
		return printWebhookSettings(cmd.OutOrStdout(), &s)
	})
	return cmd
}

// printWebhookSettings prints the settings as a field/value table.
func printWebhookSettings(w io.Writer, s *jobs.WebhookSettings) error {
	t := newTable(w, "FIELD", "VALUE")
	url := s.URL
	if url == "" {
		url = "none (set one with gb webhooks set URL)"
	}
	t.row("default url", url)
	t.row("events", strings.Join(s.Events, ", "))
	return t.flush()
}

func webhooksSetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set URL",
		Short: "Set the URL your researches notify when they end, unless started with their own",
		Example: `  gb webhooks set http://127.0.0.1:9000/   # gb webhooks listen's, on a stack with GB_FETCH_ALLOW=127.0.0.1/32:9000
  gb webhooks set https://YOUR-RECEIVER/gb   # a public https URL of yours
  gb research start "What is a WaitGroup?" --webhook-url http://127.0.0.1:9001/`,
		Args: args(1, 1, "one URL (https or http)"),
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error {
			return setWebhookURL(ctx, c, cmd.OutOrStdout(), a[0])
		}),
	}
}

func webhooksUnsetCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "unset",
		Short:   "Remove your default webhook URL; researches already started keep theirs",
		Example: `  gb webhooks unset`,
		Args:    args(0, 0, "no arguments"),
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, _ []string) error {
			return setWebhookURL(ctx, c, cmd.OutOrStdout(), "")
		}),
	}
}

// setWebhookURL sets the default URL ("" removes it) and says what it is.
func setWebhookURL(ctx context.Context, c *apiClient, w io.Writer, url string) error {
	var s jobs.WebhookSettings
	if err := c.do(ctx, "PUT", "/v1/gb/webhooks", map[string]string{"url": url}, &s); err != nil {
		return err
	}
	if s.URL == "" {
		fmt.Fprintln(w, "no default webhook URL")
		return nil
	}
	fmt.Fprintf(w, "default webhook URL: %s\n", oneLine(s.URL))
	return nil
}

func webhooksSecretShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "Print the secret that signs your webhooks (made the first time it is needed)",
		Example: `  gb webhooks secret show
  export GB_WEBHOOK_SECRET=$(gb webhooks secret show)`,
		Args: args(0, 0, "no arguments"),
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, _ []string) error {
			return printSecret(ctx, c, cmd, "GET", "/v1/gb/webhooks/secret", "made")
		}),
	}
}

func webhooksSecretRotateCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rotate",
		Short:   "Replace the secret that signs your webhooks; every delivery from now on uses the new one",
		Example: `  gb webhooks secret rotate`,
		Args:    args(0, 0, "no arguments"),
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, _ []string) error {
			return printSecret(ctx, c, cmd, "POST", "/v1/gb/webhooks/secret/rotate", "rotated")
		}),
	}
}

// printSecret prints the secret the API answers on stdout, and when it was
// made on stderr.
func printSecret(ctx context.Context, c *apiClient, cmd *cobra.Command, method, path, made string) error {
	var s jobs.WebhookSecret
	if err := c.do(ctx, method, path, nil, &s); err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), s.Secret)
	fmt.Fprintf(cmd.ErrOrStderr(), "webhook signing secret, %s %s; deliveries from now on are signed with it\n",
		made, s.CreatedAt.Local().Format("2006-01-02 15:04"))
	return nil
}

func researchWebhooksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhooks ID",
		Short: "List a research's webhook deliveries and each attempt",
		Example: `  gb research webhooks 1
  gb research webhooks 1 -o json`,
		Args: args(1, 1, "one run ID"),
	}
	o := addOutput(cmd)
	cmd.RunE = withRun(o, func(ctx context.Context, c *apiClient, cmd *cobra.Command, id int64, asJSON bool) error {
		var page struct {
			Deliveries []jobs.WebhookDelivery `json:"deliveries"`
		}
		if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d/webhooks", id), nil, &page); err != nil {
			return err
		}
		if asJSON {
			if page.Deliveries == nil {
				page.Deliveries = []jobs.WebhookDelivery{}
			}
			return writeJSON(cmd.OutOrStdout(), page)
		}
		return printDeliveries(cmd.OutOrStdout(), page.Deliveries)
	})
	return cmd
}

// printDeliveries prints each delivery, then its attempts as a table.
func printDeliveries(w io.Writer, ds []jobs.WebhookDelivery) error {
	if len(ds) == 0 {
		fmt.Fprintln(w, "no webhook deliveries: the research has no webhook URL, or has not ended")
		return nil
	}
	for i, d := range ds {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "delivery %d: %s %s to %s (webhook-id %s)\n", d.ID, oneLine(d.Event), oneLine(d.Status), oneLine(d.URL), oneLine(d.WebhookID))
		t := newTable(w, "ATTEMPT", "AT", "HTTP", "OUTCOME", "TOOK", "ERROR")
		for _, a := range d.Attempts {
			status := "-"
			if a.HTTPStatus != nil {
				status = strconv.Itoa(*a.HTTPStatus)
			}
			t.row(strconv.Itoa(a.Attempt), a.At.Local().Format("2006-01-02 15:04:05"), status, a.Outcome,
				fmt.Sprintf("%dms", a.DurationMS), fit(a.Error, 100))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}
