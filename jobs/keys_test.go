package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/migrations"
)

// newKeyUser creates the user name with a first key and returns its id
// and the key.
func newKeyUser(t *testing.T, pool *pgxpool.Pool, name string, o jobs.KeyOptions) (int64, *jobs.NewKey) {
	t.Helper()
	k, err := jobs.CreateUserKey(context.Background(), pool, name, o)
	if err != nil {
		t.Fatal(err)
	}
	uid, err := jobs.UserID(context.Background(), pool, name)
	if err != nil {
		t.Fatal(err)
	}
	return uid, k
}

func TestKeyIsListedAndRevokedKeyIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	uid, k := newKeyUser(t, pool, "alice", jobs.KeyOptions{Name: "  laptop ", ExpiresInDays: 30})
	if !strings.HasPrefix(k.Key, k.Prefix) || len(k.Prefix) != 10 || k.Name != "laptop" || k.Status != jobs.KeyActive ||
		k.ExpiresAt == nil || k.RevokedAt != nil || k.LastUsedAt != nil {
		t.Fatalf("new key: %+v", k.APIKey)
	}
	if d := k.ExpiresAt.Sub(k.CreatedAt); d != 30*24*time.Hour {
		t.Errorf("expires %v after its creation, want 30 days", d)
	}
	got, err := jobs.Authenticate(ctx, pool, k.Key)
	if err != nil || got != uid {
		t.Fatalf("authenticate: %d %v, want %d", got, err, uid)
	}
	keys, err := jobs.ListKeys(ctx, pool, uid)
	if err != nil || len(keys) != 1 || keys[0].ID != k.ID || keys[0].LastUsedAt == nil {
		t.Fatalf("list: %+v %v, want the key, used", keys, err)
	}
	revoked, err := jobs.RevokeKey(ctx, pool, uid, k.ID)
	if err != nil || revoked.Status != jobs.KeyRevoked || revoked.RevokedAt == nil {
		t.Fatalf("revoke: %+v %v", revoked, err)
	}
	_, err = jobs.Authenticate(ctx, pool, k.Key)
	if !errors.Is(err, jobs.ErrKeyRevoked) || !errors.Is(err, jobs.ErrBadKey) {
		t.Fatalf("a revoked key: %v, want ErrKeyRevoked matching ErrBadKey", err)
	}
	again, err := jobs.RevokeKey(ctx, pool, uid, k.ID)
	if err != nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Errorf("revoking again: %+v %v, want the first revocation unchanged", again, err)
	}
}

func TestExpiredKeyIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	uid, k := newKeyUser(t, pool, "alice", jobs.KeyOptions{ExpiresInDays: 1})
	if _, err := jobs.Authenticate(ctx, pool, k.Key); err != nil {
		t.Fatalf("before its expiry: %v", err)
	}
	if _, err := pool.Exec(ctx, "UPDATE gb_api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", k.ID); err != nil {
		t.Fatal(err)
	}
	_, err := jobs.Authenticate(ctx, pool, k.Key)
	if !errors.Is(err, jobs.ErrKeyExpired) || !errors.Is(err, jobs.ErrBadKey) {
		t.Fatalf("an expired key: %v, want ErrKeyExpired matching ErrBadKey", err)
	}
	keys, err := jobs.ListKeys(ctx, pool, uid)
	if err != nil || len(keys) != 1 || keys[0].Status != jobs.KeyExpired {
		t.Fatalf("list: %+v %v, want the key expired", keys, err)
	}
}

func TestKeyOfAnotherUserIsNotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	alice, ak := newKeyUser(t, pool, "alice", jobs.KeyOptions{})
	bob, _ := newKeyUser(t, pool, "bob", jobs.KeyOptions{})
	if _, err := jobs.RevokeKey(ctx, pool, bob, ak.ID); !errors.Is(err, jobs.ErrKeyNotFound) {
		t.Fatalf("bob revokes alice's key: %v, want ErrKeyNotFound", err)
	}
	keys, err := jobs.ListKeys(ctx, pool, bob)
	if err != nil || len(keys) != 1 || keys[0].ID == ak.ID {
		t.Fatalf("bob's list: %+v %v, want his key alone", keys, err)
	}
	if got, err := jobs.Authenticate(ctx, pool, ak.Key); err != nil || got != alice {
		t.Fatalf("alice's key after bob's attempt: %d %v", got, err)
	}
}

// lastUsed reads a key's last_used_at.
func lastUsed(t *testing.T, pool *pgxpool.Pool, id int64) *time.Time {
	t.Helper()
	var at *time.Time
	if err := pool.QueryRow(context.Background(), "SELECT last_used_at FROM gb_api_keys WHERE id = $1", id).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

func TestKeyLastUsedAtMovesAtMostOncePerResolution(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	_, k := newKeyUser(t, pool, "alice", jobs.KeyOptions{})
	if at := lastUsed(t, pool, k.ID); at != nil {
		t.Fatalf("a new key was used at %v", at)
	}
	auth := func() {
		t.Helper()
		if _, err := jobs.Authenticate(ctx, pool, k.Key); err != nil {
			t.Fatal(err)
		}
	}
	auth()
	first := lastUsed(t, pool, k.ID)
	if first == nil {
		t.Fatal("last_used_at is not set by a use")
	}
	auth()
	if at := lastUsed(t, pool, k.ID); !at.Equal(*first) {
		t.Errorf("a second use within %v wrote last_used_at again (%v, then %v)", jobs.LastUsedResolution, first, at)
	}
	var old time.Time
	if err := pool.QueryRow(ctx, "UPDATE gb_api_keys SET last_used_at = last_used_at - $2::interval WHERE id = $1 RETURNING last_used_at",
		k.ID, "2 minutes").Scan(&old); err != nil {
		t.Fatal(err)
	}
	auth()
	if at := lastUsed(t, pool, k.ID); !at.After(old) {
		t.Errorf("a use after %v left last_used_at at %v", jobs.LastUsedResolution, at)
	}
}

func TestKeyOptionsAreChecked(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	for _, c := range []struct {
		o     jobs.KeyOptions
		field string
	}{
		{jobs.KeyOptions{Name: "tab\there"}, "name"},
		{jobs.KeyOptions{Name: strings.Repeat("é", jobs.MaxKeyNameChars+1)}, "name"},
		{jobs.KeyOptions{Name: "bad \xff utf-8"}, "name"},
		{jobs.KeyOptions{ExpiresInDays: -1}, "expires_in_days"},
		{jobs.KeyOptions{ExpiresInDays: jobs.MaxKeyDays + 1}, "expires_in_days"},
	} {
		_, err := jobs.CreateUserKey(context.Background(), pool, "alice", c.o)
		var fe *jobs.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want a FieldError of %s", c.o, err, c.field)
		}
	}
	if _, err := jobs.CreateUserKey(context.Background(), pool, "alice",
		jobs.KeyOptions{Name: strings.Repeat("é", jobs.MaxKeyNameChars), ExpiresInDays: jobs.MaxKeyDays}); err != nil {
		t.Errorf("the longest name and life: %v", err)
	}
}

func TestKeysPerUserAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	uid, first := newKeyUser(t, pool, "alice", jobs.KeyOptions{})
	for range jobs.MaxKeysPerUser - 1 {
		if _, err := jobs.IssueKey(ctx, pool, uid, jobs.KeyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := jobs.IssueKey(ctx, pool, uid, jobs.KeyOptions{}); !errors.Is(err, jobs.ErrTooManyKeys) {
		t.Fatalf("key %d: %v, want ErrTooManyKeys", jobs.MaxKeysPerUser+1, err)
	}
	if _, err := jobs.RevokeKey(ctx, pool, uid, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.IssueKey(ctx, pool, uid, jobs.KeyOptions{}); err != nil {
		t.Fatalf("a key after one was revoked: %v", err)
	}
}

// TestKeyMigrationKeepsExistingKeys takes a database back to before
// migration 14, makes a key as the old schema did, and migrates up again:
// the key still works, and shows in the list with no name and no expiry.
// Going down drops a revoked key rather than reviving it.
func TestKeyMigrationKeepsExistingKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	uid, revoked := newKeyUser(t, pool, "alice", jobs.KeyOptions{})
	if _, err := jobs.RevokeKey(ctx, pool, uid, revoked.ID); err != nil {
		t.Fatal(err)
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.DownTo(ctx, 13); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM gb_api_keys").Scan(&left); err != nil || left != 0 {
		t.Fatalf("after down: %d keys (%v), want the revoked one gone", left, err)
	}
	// An old-style key: what CreateKey stored before migration 14.
	const key = "gb_oldstyleAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	if _, err := pool.Exec(ctx, `INSERT INTO gb_api_keys (hash, prefix, user_id) VALUES (sha256($1::bytea), $2, $3)`,
		[]byte(key), key[:10], uid); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := jobs.Authenticate(ctx, pool, key); err != nil || got != uid {
		t.Fatalf("the old key after the migration: %d %v", got, err)
	}
	keys, err := jobs.ListKeys(ctx, pool, uid)
	if err != nil || len(keys) != 1 || keys[0].ID <= 0 || keys[0].Prefix != key[:10] || keys[0].Status != jobs.KeyActive ||
		keys[0].Name != "" || keys[0].ExpiresAt != nil {
		t.Fatalf("list after the migration: %+v %v", keys, err)
	}
}
