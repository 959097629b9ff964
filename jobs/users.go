package jobs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ErrBadKey is returned for an API key that is unknown or malformed.
var ErrBadKey = errors.New("invalid API key")

// keyPrefix starts every API key, so a leaked key is easy to recognise.
const keyPrefix = "gb_"

// CreateKey creates the user if needed and a new API key for them. The key
// is returned once; only its SHA-256 is stored.
func CreateKey(ctx context.Context, db DB, user string) (string, error) {
	var userID int64
	err := db.QueryRow(ctx, `INSERT INTO gb_users (name) VALUES ($1)
		ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id`, user).Scan(&userID)
	if err != nil {
		return "", fmt.Errorf("error creating user %q (names are 1 to 64 letters, digits, '.', '_', '@' or '-'): %w", user, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("error generating key: %w", err)
	}
	key := keyPrefix + base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(key))
	if _, err := db.Exec(ctx, `INSERT INTO gb_api_keys (hash, prefix, user_id) VALUES ($1, $2, $3)`,
		sum[:], key[:10], userID); err != nil {
		return "", fmt.Errorf("error storing key: %w", err)
	}
	return key, nil
}

// Authenticate returns the id of the user who owns key.
func Authenticate(ctx context.Context, db DB, key string) (int64, error) {
	if !strings.HasPrefix(key, keyPrefix) || len(key) > 100 {
		return 0, ErrBadKey
	}
	sum := sha256.Sum256([]byte(key))
	var userID int64
	err := db.QueryRow(ctx, "SELECT user_id FROM gb_api_keys WHERE hash = $1", sum[:]).Scan(&userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrBadKey
	}
	if err != nil {
		return 0, fmt.Errorf("error checking API key: %w", err)
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
