package jobs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// ErrBadKey is returned for an API key that is unknown or malformed. The
// errors of a key that was revoked or has expired match it too (errors.Is).
var ErrBadKey = errors.New("invalid API key")

// ErrKeyRevoked is returned by Authenticate for a key that was revoked.
var ErrKeyRevoked error = &keyError{"API key was revoked"}

// ErrKeyExpired is returned by Authenticate for a key past its expiry.
var ErrKeyExpired error = &keyError{"API key has expired"}

// ErrKeyNotFound is returned for a key id that is not one of the user's.
var ErrKeyNotFound = errors.New("API key not found")

// ErrTooManyKeys is returned when a user who already has MaxKeysPerUser
// live keys asks for another.
var ErrTooManyKeys = fmt.Errorf("a user may have at most %d API keys that are neither revoked nor expired; revoke one first", MaxKeysPerUser)

// keyError is a refused key that is known: it matches ErrBadKey.
type keyError struct{ msg string }

// Error implements error.
func (e *keyError) Error() string { return e.msg }

// Is makes a revoked or expired key an ErrBadKey.
func (e *keyError) Is(target error) bool { return target == ErrBadKey }

// keyPrefix starts every API key, so a leaked key is easy to recognise.
const keyPrefix = "gb_"

// shownChars is how much of a key is stored in the clear, as its prefix:
// "gb_" and 7 characters (42 of its 256 random bits), enough to tell keys
// apart and far from enough to guess one.
const shownChars = 10

// ShownPrefix is the part of key that is stored in the clear and shown to
// people, its first shownChars characters; "" for a string too short to be
// a key.
func ShownPrefix(key string) string {
	if len(key) < shownChars {
		return ""
	}
	return key[:shownChars]
}

// Limits of a key's options.
const (
	// MaxKeyNameChars bounds the name (label) of a key, in characters.
	MaxKeyNameChars = 64
	// MaxKeyDays bounds the life of a key that expires, in days.
	MaxKeyDays = 3650
	// MaxKeysPerUser bounds the keys of a user that are neither revoked
	// nor expired.
	MaxKeysPerUser = 100
)

// LastUsedResolution is how stale a key's last_used_at may get: the lookup
// of a key writes it only when it is older than this, so that most
// requests read and do not write.
const LastUsedResolution = time.Minute

// The Status of an APIKey.
const (
	KeyActive  = "active"
	KeyExpired = "expired"
	KeyRevoked = "revoked"
)

// APIKey is what is shown of an API key: never the key, nor its hash.
type APIKey struct {
	ID int64 `json:"id"`
	// Prefix is the start of the key ("gb_" and 7 characters).
	Prefix string `json:"prefix"`
	// Name is the owner's label for the key; empty when none.
	Name string `json:"name"`
	// Status is KeyActive, KeyExpired or KeyRevoked.
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	// LastUsedAt is when a request last used the key, to within
	// LastUsedResolution; nil when it never was.
	LastUsedAt *time.Time `json:"last_used_at"`
	// ExpiresAt is nil for a key that never expires.
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// NewKey is a key just created: the key itself, shown this once, and what
// is kept of it.
type NewKey struct {
	Key string `json:"key"`
	APIKey
}

// KeyOptions are the choices of a new key.
type KeyOptions struct {
	// Name labels the key: at most MaxKeyNameChars characters, no control
	// characters; white space around it is dropped.
	Name string
	// ExpiresInDays is the key's life, from 1 to MaxKeyDays; 0 means it
	// never expires.
	ExpiresInDays int
}

// check validates the options, naming the field at fault as the API's
// body spells it.
func (o *KeyOptions) check() error {
	o.Name = strings.TrimSpace(o.Name)
	switch {
	case !utf8.ValidString(o.Name) || strings.ContainsFunc(o.Name, unicode.IsControl):
		return &FieldError{Field: "name", Msg: "must be text without control characters"}
	case utf8.RuneCountInString(o.Name) > MaxKeyNameChars:
		return &FieldError{Field: "name", Msg: fmt.Sprintf("must be at most %d characters (got %d)",
			MaxKeyNameChars, utf8.RuneCountInString(o.Name))}
	case o.ExpiresInDays < 0 || o.ExpiresInDays > MaxKeyDays:
		return &FieldError{Field: "expires_in_days", Msg: fmt.Sprintf(
			"must be between 1 and %d (got %d); leave it out for a key that never expires", MaxKeyDays, o.ExpiresInDays)}
	}
	return nil
}

// keyColumns are the columns of an APIKey, in the order scanKey reads.
const keyColumns = `id, prefix, name,
	CASE WHEN revoked_at IS NOT NULL THEN 'revoked' WHEN expires_at <= now() THEN 'expired' ELSE 'active' END,
	created_at, last_used_at, expires_at, revoked_at`

func scanKey(row pgx.Row) (*APIKey, error) {
	var k APIKey
	err := row.Scan(&k.ID, &k.Prefix, &k.Name, &k.Status, &k.CreatedAt, &k.LastUsedAt, &k.ExpiresAt, &k.RevokedAt)
	return &k, err
}

// CreateKey creates the user if needed and a new API key for them, with no
// name and no expiry. The key is returned once; only its SHA-256 is stored.
func CreateKey(ctx context.Context, db DB, user string) (string, error) {
	k, err := CreateUserKey(ctx, db, user, KeyOptions{})
	if err != nil {
		return "", err
	}
	return k.Key, nil
}

// CreateUserKey creates the named user if needed and a new API key for
// them with the options o.
func CreateUserKey(ctx context.Context, db DB, user string, o KeyOptions) (*NewKey, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	var userID int64
	err := db.QueryRow(ctx, `INSERT INTO gb_users (name) VALUES ($1)
		ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id`, user).Scan(&userID)
	if err != nil {
		return nil, fmt.Errorf("error creating user %q (names are 1 to 64 letters, digits, '.', '_', '@' or '-'): %w", user, err)
	}
	return IssueKey(ctx, db, userID, o)
}

// IssueKey creates a new API key for the user with the options o, unless
// they have MaxKeysPerUser live keys already (ErrTooManyKeys). The key is
// returned once; only its SHA-256 is stored.
func IssueKey(ctx context.Context, db DB, userID int64, o KeyOptions) (*NewKey, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("error generating key: %w", err)
	}
	key := keyPrefix + base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(key))
	// The count and the insert are one statement: keys created at the same
	// moment may pass the bound together, which is all it is for.
	k, err := scanKey(db.QueryRow(ctx, `INSERT INTO gb_api_keys (hash, prefix, user_id, name, expires_at)
		SELECT $1, $2, $3, $4, CASE WHEN $5::int > 0 THEN now() + make_interval(days => $5::int) END
		WHERE (SELECT count(*) FROM gb_api_keys WHERE user_id = $3 AND revoked_at IS NULL
			AND (expires_at IS NULL OR expires_at > now())) < $6
		RETURNING `+keyColumns, sum[:], ShownPrefix(key), userID, o.Name, o.ExpiresInDays, MaxKeysPerUser))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrTooManyKeys
	}
	if err != nil {
		return nil, fmt.Errorf("error storing key: %w", err)
	}
	return &NewKey{Key: key, APIKey: *k}, nil
}

// ListKeys returns the user's keys, revoked and expired ones included,
// newest first.
func ListKeys(ctx context.Context, db DB, userID int64) ([]APIKey, error) {
	rows, err := db.Query(ctx, `SELECT `+keyColumns+` FROM gb_api_keys WHERE user_id = $1 ORDER BY id DESC`, userID)
	if err != nil {
		return nil, fmt.Errorf("error listing keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (APIKey, error) {
		k, err := scanKey(row)
		return *k, err
	})
	if err != nil {
		return nil, fmt.Errorf("error listing keys: %w", err)
	}
	return keys, nil
}

// RevokeKey revokes the user's key keyID: the next request with it is
// refused. Revoking a revoked key changes nothing. A key that is not the
// user's is ErrKeyNotFound.
func RevokeKey(ctx context.Context, db DB, userID, keyID int64) (*APIKey, error) {
	k, err := scanKey(db.QueryRow(ctx, `UPDATE gb_api_keys SET revoked_at = coalesce(revoked_at, now())
		WHERE id = $1 AND user_id = $2 RETURNING `+keyColumns, keyID, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("error revoking key: %w", err)
	}
	return k, nil
}

// authenticateSQL looks a key up by its hash and, in the same statement,
// records its use when the last one recorded is LastUsedResolution old
// ($2 seconds): the update sees the row as it is when it runs, so of
// requests at the same moment one writes. The SELECT sees the row as it
// was before the update, which changes none of what it reads.
const authenticateSQL = `WITH used AS (
	UPDATE gb_api_keys SET last_used_at = now()
	WHERE hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
		AND (last_used_at IS NULL OR last_used_at <= now() - make_interval(secs => $2))
	RETURNING 1)
SELECT user_id, revoked_at IS NOT NULL, coalesce(expires_at <= now(), false)
FROM gb_api_keys WHERE hash = $1`

// Authenticate returns the id of the user who owns key. A key that is
// unknown or malformed is ErrBadKey; one that was revoked ErrKeyRevoked,
// one past its expiry ErrKeyExpired (both match ErrBadKey).
func Authenticate(ctx context.Context, db DB, key string) (int64, error) {
	if !strings.HasPrefix(key, keyPrefix) || len(key) > 100 {
		return 0, ErrBadKey
	}
	sum := sha256.Sum256([]byte(key))
	var (
		userID           int64
		revoked, expired bool
	)
	err := db.QueryRow(ctx, authenticateSQL, sum[:], LastUsedResolution.Seconds()).Scan(&userID, &revoked, &expired)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, ErrBadKey
	case err != nil:
		return 0, fmt.Errorf("error checking API key: %w", err)
	case revoked:
		return 0, ErrKeyRevoked
	case expired:
		return 0, ErrKeyExpired
	}
	return userID, nil
}

// UserID returns the id of the named user.
func UserID(ctx context.Context, db DB, name string) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, "SELECT id FROM gb_users WHERE name = $1", name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("no user named %q: create one with gb keys create --user %s", name, name)
	}
	if err != nil {
		return 0, fmt.Errorf("error reading user: %w", err)
	}
	return id, nil
}
