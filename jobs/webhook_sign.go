package jobs

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file signs deliveries as Standard Webhooks does: the headers
// webhook-id (the event's id, the same for every attempt),
// webhook-timestamp (the attempt's time, in Unix seconds) and
// webhook-signature ("v1," and the base64 HMAC-SHA256 of
// "id.timestamp.body" keyed by the secret's decoded bytes), with a secret
// per user written "whsec_" and the base64 of 32 random bytes.

// Standard Webhooks header names.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// webhookSecretPrefix starts every signing secret.
const webhookSecretPrefix = "whsec_"

// webhookSecretBytes is the size of a secret's key (the spec asks for 24
// to 64).
const webhookSecretBytes = 32

// WebhookSecret is a user's signing secret.
type WebhookSecret struct {
	// Secret is "whsec_" and the base64 of the HMAC key.
	Secret string `json:"secret"`
	// CreatedAt is when it was made (by its first use, or a rotation).
	CreatedAt time.Time `json:"created_at"`
}

// newWebhookSecret makes a random secret.
func newWebhookSecret() string {
	b := make([]byte, webhookSecretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return webhookSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// GetWebhookSecret returns the user's signing secret, made on its first
// use.
func GetWebhookSecret(ctx context.Context, db DB, userID int64) (*WebhookSecret, error) {
	var s WebhookSecret
	err := db.QueryRow(ctx, "SELECT secret, created_at FROM gb_webhook_secrets WHERE user_id = $1", userID).
		Scan(&s.Secret, &s.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// The no-op update returns the row of a first use that raced this
		// one, which DO NOTHING would not.
		err = db.QueryRow(ctx, `INSERT INTO gb_webhook_secrets (user_id, secret) VALUES ($1, $2)
			ON CONFLICT (user_id) DO UPDATE SET secret = gb_webhook_secrets.secret
			RETURNING secret, created_at`, userID, newWebhookSecret()).Scan(&s.Secret, &s.CreatedAt)
	}
	if err != nil {
		return nil, fmt.Errorf("error reading the webhook secret: %w", err)
	}
	return &s, nil
}

// RotateWebhookSecret replaces the user's signing secret with a new one and
// returns it: every delivery from then on, retries of earlier events too,
// is signed with it.
func RotateWebhookSecret(ctx context.Context, db DB, userID int64) (*WebhookSecret, error) {
	var s WebhookSecret
	err := db.QueryRow(ctx, `INSERT INTO gb_webhook_secrets (user_id, secret) VALUES ($1, $2)
		ON CONFLICT (user_id) DO UPDATE SET secret = excluded.secret, created_at = now()
		RETURNING secret, created_at`, userID, newWebhookSecret()).Scan(&s.Secret, &s.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("error rotating the webhook secret: %w", err)
	}
	return &s, nil
}

// SignWebhook returns the webhook-signature of a message: "v1," and the
// base64 HMAC-SHA256 of "msgID.timestamp.body" keyed by the decoded
// secret.
func SignWebhook(secret, msgID string, timestamp int64, body []byte) (string, error) {
	b64, ok := strings.CutPrefix(secret, webhookSecretPrefix)
	if !ok {
		return "", errors.New("a webhook secret starts with " + webhookSecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", fmt.Errorf("the webhook secret is not base64 after %s: %w", webhookSecretPrefix, err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// webhookHeaders are the headers of one attempt at t.
func webhookHeaders(secret, msgID string, t time.Time, body []byte) (map[string]string, error) {
	ts := t.Unix()
	sig, err := SignWebhook(secret, msgID, ts, body)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		HeaderWebhookID:        msgID,
		HeaderWebhookTimestamp: strconv.FormatInt(ts, 10),
		HeaderWebhookSignature: sig,
	}, nil
}

// newWebhookMsgID is a new webhook-id: "msg_" and 128 random bits in hex,
// unique across databases (a receiver keeps the ids it has seen).
func newWebhookMsgID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "msg_" + hex.EncodeToString(b)
}
