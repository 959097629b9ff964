-- +goose Up
-- A root run is its own tree's root. The insert that starts a research
-- leaves root_id out and this trigger sets it from the id the column's
-- default just drew, so the statement calls no sequence function itself
-- (nextval() in a statement pins an RDS Proxy session). Sub-agents name
-- their root and are left alone.
-- +goose StatementBegin
CREATE FUNCTION gb_runs_root_default() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.root_id IS NULL THEN
        NEW.root_id := NEW.id;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER gb_runs_root_default BEFORE INSERT ON gb_agent_research_runs
    FOR EACH ROW EXECUTE FUNCTION gb_runs_root_default();

-- Idempotency-Key of POST /v1/gb/research: one claim per user and key.
-- request_hash is the hash of the decoded request, so the same key with
-- another request is refused; status, location and body are the first
-- answer, replayed to every retry. A claim older than 24 hours is replaced
-- by the next request that uses its key. The research a claim starts
-- carries the claim's id in its schedule_key, which makes concurrent
-- retries start it once.
CREATE TABLE gb_idempotency_keys (
    id           bigserial PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES gb_users (id) ON DELETE CASCADE,
    key          text NOT NULL,
    request_hash text NOT NULL,
    status       int,
    location     text NOT NULL DEFAULT '',
    body         bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, key)
);
CREATE INDEX gb_idempotency_keys_created_idx ON gb_idempotency_keys (created_at);

-- +goose Down
DROP TABLE gb_idempotency_keys;
DROP TRIGGER gb_runs_root_default ON gb_agent_research_runs;
DROP FUNCTION gb_runs_root_default();
