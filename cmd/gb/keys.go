package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

// This file holds gb keys: a user's own keys over the REST API (GB_API_URL
// with GB_API_KEY), or with --user NAME any user's on the database
// (DATABASE_URL), the operator's way in for a user with no key yet.

func keysCmd() *cobra.Command {
	return group("keys", "Manage API keys: your own over the API, or any user's with --user (DATABASE_URL)",
		`  gb keys list
  gb keys create --name laptop --expires-in-days 90
  gb keys revoke 7
  export GB_API_KEY=$(gb keys create --user alice)`,
		keysListCmd(), keysCreateCmd(), keysRevokeCmd())
}

// keyStore is where gb keys finds the keys: the API or the database.
type keyStore interface {
	list(ctx context.Context) ([]jobs.APIKey, error)
	create(ctx context.Context, o jobs.KeyOptions) (*jobs.NewKey, error)
	revoke(ctx context.Context, id int64) (*jobs.APIKey, error)
	// inUse is the prefix of the key the requests are made with; "" on
	// the database.
	inUse() string
	close()
}

// openKeys is the API's store of the caller's keys, or with --user NAME
// the database's store of that user's.
func openKeys(cmd *cobra.Command, user string) (keyStore, error) {
	if cmd.Flags().Changed("user") && user == "" {
		return nil, usageErrorf("--user needs a user name")
	}
	if user == "" {
		c, err := newAPIClient()
		if err != nil {
			return nil, err
		}
		return apiKeys{c}, nil
	}
	pool, err := openDB(cmd.Context())
	if err != nil {
		return nil, err
	}
	return &dbKeys{pool: pool, user: user}, nil
}

// addUserFlag gives cmd --user NAME.
func addUserFlag(cmd *cobra.Command, user *string) {
	cmd.Flags().StringVar(user, "user", "", "work on this user's keys on DATABASE_URL instead of your own over the API")
}

func keysListCmd() *cobra.Command {
	var user string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List API keys, newest first, revoked and expired ones included",
		Example: `  gb keys list
  gb keys list -o json
  gb keys list --user alice   # any user's, on DATABASE_URL`,
		Args: args(0, 0, "no arguments"),
	}
	o := addOutput(cmd)
	addUserFlag(cmd, &user)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := o.isJSON()
		if err != nil {
			return err
		}
		s, err := openKeys(cmd, user)
		if err != nil {
			return err
		}
		defer s.close()
		keys, err := s.list(cmd.Context())
		if err != nil {
			return err
		}
		if keys == nil {
			keys = []jobs.APIKey{}
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), map[string]any{"keys": keys})
		}
		return printKeys(cmd.OutOrStdout(), keys, s.inUse())
	}
	return cmd
}

// printKeys prints keys as a table; the one whose prefix is inUse is
// marked.
func printKeys(w io.Writer, keys []jobs.APIKey, inUse string) error {
	t := newTable(w, "ID", "PREFIX", "NAME", "STATUS", "CREATED", "LAST USED", "EXPIRES")
	for _, k := range keys {
		prefix := k.Prefix
		if inUse != "" && k.Prefix == inUse {
			prefix += " *"
		}
		t.row(strconv.FormatInt(k.ID, 10), prefix, fit(k.Name, 32), k.Status, when(&k.CreatedAt, ""),
			when(k.LastUsedAt, "never"), when(k.ExpiresAt, "never"))
	}
	if err := t.flushOrEmpty("no keys"); err != nil {
		return err
	}
	if inUse != "" {
		fmt.Fprintln(w, "* the key in GB_API_KEY")
	}
	return nil
}

// when is t in local time to the minute, or none when t is nil.
func when(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.Local().Format("2006-01-02 15:04")
}

func keysCreateCmd() *cobra.Command {
	var (
		user, name string
		days       int
	)
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an API key; it is printed once, and only its hash is stored",
		Example: `  export GB_API_KEY=$(gb keys create --name laptop --expires-in-days 90)
  gb keys create --user alice     # any user's, on DATABASE_URL; creates the user if needed
  gb keys create --user alice -o json`,
		Args: args(0, 0, "no arguments (name the key with --name)"),
	}
	o := addOutput(cmd)
	addUserFlag(cmd, &user)
	cmd.Flags().StringVar(&name, "name", "", "a label for the key (at most 64 characters)")
	cmd.Flags().IntVar(&days, "expires-in-days", 0, fmt.Sprintf("days until the key expires, 1 to %d (default: never)", jobs.MaxKeyDays))
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := o.isJSON()
		if err != nil {
			return err
		}
		if days < 0 || days > jobs.MaxKeyDays {
			return usageErrorf("--expires-in-days must be from 1 to %d, or 0 for a key that never expires (got %d)", jobs.MaxKeyDays, days)
		}
		s, err := openKeys(cmd, user)
		if err != nil {
			return err
		}
		defer s.close()
		k, err := s.create(cmd.Context(), jobs.KeyOptions{Name: name, ExpiresInDays: days})
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), k)
		}
		fmt.Fprintln(cmd.OutOrStdout(), k.Key)
		fmt.Fprintf(cmd.ErrOrStderr(), "API key %d (%s%s) printed above, expires %s; it is shown once and stored only as a hash.\n",
			k.ID, k.Prefix, forUser(user), when(k.ExpiresAt, "never"))
		return nil
	}
	return cmd
}

// forUser is " for NAME", or "" for the caller's own keys.
func forUser(user string) string {
	if user == "" {
		return ""
	}
	return " for " + user
}

func keysRevokeCmd() *cobra.Command {
	var user string
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key: the next request with it is refused",
		Example: `  gb keys revoke 7
  gb keys revoke 7 --user alice   # any user's, on DATABASE_URL`,
		Args: args(1, 1, "one key ID (see gb keys list)"),
	}
	addUserFlag(cmd, &user)
	cmd.RunE = func(cmd *cobra.Command, a []string) error {
		id, err := strconv.ParseInt(a[0], 10, 64)
		if err != nil || id <= 0 {
			return usageErrorf("%q is not a key id (a positive integer; see gb keys list)", a[0])
		}
		s, err := openKeys(cmd, user)
		if err != nil {
			return err
		}
		defer s.close()
		k, err := s.revoke(cmd.Context(), id)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "revoked key %d (%s%s) at %s\n", k.ID, k.Prefix, forUser(user), when(k.RevokedAt, "-"))
		if k.Prefix == s.inUse() {
			fmt.Fprintln(cmd.ErrOrStderr(), "it was the key in GB_API_KEY, which no longer works")
		}
		return nil
	}
	return cmd
}

// apiKeys are the caller's keys, over the API.
type apiKeys struct{ c *apiClient }

func (s apiKeys) list(ctx context.Context) ([]jobs.APIKey, error) {
	var page struct {
		Keys []jobs.APIKey `json:"keys"`
	}
	if err := s.c.do(ctx, "GET", "/v1/gb/keys", nil, &page); err != nil {
		return nil, err
	}
	return page.Keys, nil
}

func (s apiKeys) create(ctx context.Context, o jobs.KeyOptions) (*jobs.NewKey, error) {
	body := map[string]any{}
	if o.Name != "" {
		body["name"] = o.Name
	}
	if o.ExpiresInDays > 0 {
		body["expires_in_days"] = o.ExpiresInDays
	}
	var k jobs.NewKey
	if err := s.c.do(ctx, "POST", "/v1/gb/keys", body, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

func (s apiKeys) revoke(ctx context.Context, id int64) (*jobs.APIKey, error) {
	var k jobs.APIKey
	if err := s.c.do(ctx, "DELETE", fmt.Sprintf("/v1/gb/keys/%d", id), nil, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

func (s apiKeys) inUse() string { return jobs.ShownPrefix(s.c.key) }

func (apiKeys) close() {}

// dbKeys are the keys of a named user, on the database.
type dbKeys struct {
	pool *pgxpool.Pool
	user string
}

func (s *dbKeys) list(ctx context.Context) ([]jobs.APIKey, error) {
	uid, err := jobs.UserID(ctx, s.pool, s.user)
	if err != nil {
		return nil, err
	}
	return jobs.ListKeys(ctx, s.pool, uid)
}

func (s *dbKeys) create(ctx context.Context, o jobs.KeyOptions) (*jobs.NewKey, error) {
	return jobs.CreateUserKey(ctx, s.pool, s.user, o)
}

func (s *dbKeys) revoke(ctx context.Context, id int64) (*jobs.APIKey, error) {
	uid, err := jobs.UserID(ctx, s.pool, s.user)
	if err != nil {
		return nil, err
	}
	k, err := jobs.RevokeKey(ctx, s.pool, uid, id)
	if errors.Is(err, jobs.ErrKeyNotFound) {
		return nil, fmt.Errorf("user %s has no API key with id %d (see gb keys list --user %s): %w", s.user, id, s.user, err)
	}
	return k, err
}

func (*dbKeys) inUse() string { return "" }

func (s *dbKeys) close() { s.pool.Close() }
