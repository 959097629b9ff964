-- +goose Up
-- API keys a user can list, revoke and give an expiry. A key is still found
-- by its hash; id names it to people and routes (DELETE /v1/gb/keys/{id}),
-- and prefix (existing since 001: "gb_" and the next 7 characters of the
-- key, not enough to guess it) tells keys apart. Existing keys get an id,
-- no name, no expiry and are not revoked: they keep working.
-- last_used_at is written by the lookup itself, at most once a minute.
ALTER TABLE gb_api_keys
    ADD COLUMN id bigserial UNIQUE,
    ADD COLUMN name text NOT NULL DEFAULT '' CHECK (char_length(name) <= 64),
    ADD COLUMN last_used_at timestamptz,
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN revoked_at timestamptz;
CREATE INDEX gb_api_keys_user_idx ON gb_api_keys (user_id, id);

-- +goose Down
-- The old schema cannot tell a revoked or expired key from a good one:
-- they are deleted rather than brought back to life. Keys with an expiry
-- still ahead lose it.
DELETE FROM gb_api_keys WHERE revoked_at IS NOT NULL OR expires_at <= now();
DROP INDEX gb_api_keys_user_idx;
ALTER TABLE gb_api_keys
    DROP COLUMN id, DROP COLUMN name, DROP COLUMN last_used_at,
    DROP COLUMN expires_at, DROP COLUMN revoked_at;
