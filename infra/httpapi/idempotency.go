package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs"
)

// Idempotency-Key of POST /v1/gb/research.
const (
	// IdempotencyKeyHeader names the request header.
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader is set to "true" on an answer replayed for a key.
	ReplayedHeader = "Idempotent-Replayed"
	// IdempotencyKeyMaxLen bounds a key, in bytes.
	IdempotencyKeyMaxLen = 255
	// IdempotencyWindow is how long a key's first answer is replayed.
	IdempotencyWindow = 24 * time.Hour
	// replayWait bounds how long a retry that raced the first request
	// waits for the first answer to be stored.
	replayWait = 2 * time.Second
)

// claim is the hold of one request on its Idempotency-Key.
type claim struct {
	id          int64
	status      int
	location    string
	body        []byte
	userID      int64
	requestHash string
}

// scheduleKey is the idempotency key of the research the claim starts: a
// retry that races the first request finds the run the first one started
// (jobs.StartParams.ScheduleKey). A scheduler key always holds a "/", so
// the two never meet.
func (c *claim) scheduleKey() string { return "http-idempotency:" + strconv.FormatInt(c.id, 10) }

// claimIdempotencyKey handles the Idempotency-Key header of a create. With
// no header it returns nil and false. Otherwise it claims the key for the
// user (or finds the claim of an earlier request) and either answers the
// request itself (a bad key, a key used for another request, or the
// stored first answer: answered is true) or returns the claim with p's
// ScheduleKey set from it.
func (a *api) claimIdempotencyKey(w http.ResponseWriter, r *http.Request, req createRequest, p *jobs.StartParams) (c *claim, answered bool) {
	values := r.Header.Values(IdempotencyKeyHeader)
	if len(values) == 0 {
		return nil, false
	}
	key := values[0]
	if msg := checkIdempotencyKey(values); msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_request", IdempotencyKeyHeader, msg)
		return nil, true
	}
	canonical, err := json.Marshal(req)
	if err != nil {
		a.internal(w, r, fmt.Errorf("error encoding request: %w", err))
		return nil, true
	}
	sum := sha256.Sum256(canonical)
	c, err = loadClaim(r.Context(), a.Service.Pool(), p.UserID, key, hex.EncodeToString(sum[:]))
	if err != nil {
		a.fail(w, r, err)
		return nil, true
	}
	if c.requestHash != hex.EncodeToString(sum[:]) {
		writeError(w, http.StatusUnprocessableEntity, "idempotency_key_reused", IdempotencyKeyHeader,
			"this Idempotency-Key was used in the last 24 hours for a different request; use a new key for a new request")
		return nil, true
	}
	if c.status != 0 {
		c.replay(w)
		return nil, true
	}
	p.ScheduleKey = c.scheduleKey()
	return c, false
}

// checkIdempotencyKey returns what is wrong with the header's values, or "".
func checkIdempotencyKey(values []string) string {
	if len(values) > 1 {
		return "send one Idempotency-Key header, not several"
	}
	key := values[0]
	if key == "" || len(key) > IdempotencyKeyMaxLen {
		return fmt.Sprintf("must be 1 to %d characters, such as a UUID", IdempotencyKeyMaxLen)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return "must be printable ASCII with no spaces, such as a UUID"
		}
	}
	return ""
}

// loadClaim claims the key for the user, after deleting the user's claims
// older than the window (so the table holds a day of each user's keys), or
// returns the live claim an earlier request made.
func loadClaim(ctx context.Context, db jobs.DB, userID int64, key, hash string) (*claim, error) {
	if _, err := db.Exec(ctx, `DELETE FROM gb_idempotency_keys
		WHERE user_id = $1 AND created_at < now() - $2 * interval '1 second'`, userID, IdempotencyWindow.Seconds()); err != nil {
		return nil, fmt.Errorf("error expiring idempotency key: %w", err)
	}
	for range 3 {
		c := &claim{userID: userID}
		var status *int
		err := db.QueryRow(ctx, `WITH ins AS (
				INSERT INTO gb_idempotency_keys (user_id, key, request_hash) VALUES ($1, $2, $3)
				ON CONFLICT (user_id, key) DO NOTHING
				RETURNING id, request_hash, status, location, body
			)
			SELECT id, request_hash, status, location, body FROM ins
			UNION ALL
			SELECT id, request_hash, status, location, body FROM gb_idempotency_keys
			WHERE user_id = $1 AND key = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
			userID, key, hash).Scan(&c.id, &c.requestHash, &status, &c.location, &c.body)
		if errors.Is(err, pgx.ErrNoRows) {
			// Another request's claim committed after this statement's
			// snapshot: it conflicted but is not visible yet. Look again.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("error claiming idempotency key: %w", err)
		}
		if status != nil {
			c.status = *status
		}
		return c, nil
	}
	return nil, errors.New("error claiming idempotency key: the key's claim could not be read")
}

// store records the first answer of the claim; a later one does not
// replace it. Its failure is logged: the research exists, and a retry
// still finds it through the claim's schedule key.
func (a *api) store(ctx context.Context, c *claim, status int, location string, v any) []byte {
	body := encodeJSON(v)
	if c == nil {
		return body
	}
	if _, err := a.Service.Pool().Exec(context.WithoutCancel(ctx), `UPDATE gb_idempotency_keys
		SET status = $2, location = $3, body = $4 WHERE id = $1 AND status IS NULL`, c.id, status, location, body); err != nil {
		a.Logger.WarnContext(ctx, "could not store the answer of an idempotency key", "claim", c.id, "err", err)
	}
	return body
}

// answerRepeat answers a request that found the run its claim's first
// request started: with the first answer once it is stored, or else, after
// replayWait, with the run as it is now.
func (a *api) answerRepeat(w http.ResponseWriter, r *http.Request, c *claim, run *jobs.Run) {
	deadline := time.Now().Add(replayWait)
	for {
		var status *int
		err := a.Service.Pool().QueryRow(r.Context(), `SELECT status, location, body FROM gb_idempotency_keys WHERE id = $1`, c.id).
			Scan(&status, &c.location, &c.body)
		if err == nil && status != nil {
			c.status = *status
			c.replay(w)
			return
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			a.fail(w, r, err)
			return
		}
		if time.Now().After(deadline) || r.Context().Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	location := "/v1/gb/research/" + strconv.FormatInt(run.ID, 10)
	body := a.store(r.Context(), c, http.StatusAccepted, location, run)
	(&claim{status: http.StatusAccepted, location: location, body: body}).replay(w)
}

// replay writes the stored first answer.
func (c *claim) replay(w http.ResponseWriter) {
	if c.location != "" {
		w.Header().Set("Location", c.location)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(ReplayedHeader, "true")
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body)
}

// encodeJSON encodes v as writeJSON does.
func encodeJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return []byte(`{"error":{"code":"internal","message":"unencodable answer"}}` + "\n")
	}
	return append(b, '\n')
}
