-- +goose Up
-- Webhooks: gb POSTs to a URL when a root research ends, signed in the
-- Standard Webhooks format with a secret of its owner's.

-- The URL a user's researches notify when they start without one of their
-- own; NULL: none.
ALTER TABLE gb_users ADD COLUMN webhook_url text CHECK (char_length(webhook_url) <= 2000);

-- The URL a root research notifies, fixed when it starts (its own, else its
-- owner's default at that time); NULL: none. Sub-agents have none.
ALTER TABLE gb_agent_research_runs ADD COLUMN webhook_url text CHECK (char_length(webhook_url) <= 2000);

-- Each user's signing secret ("whsec_" and the base64 of 32 random bytes),
-- made the first time it is needed and replaced when its owner rotates it.
-- It signs every delivery made afterwards, retries of earlier events too.
CREATE TABLE gb_webhook_secrets (
    user_id    bigint PRIMARY KEY REFERENCES gb_users (id) ON DELETE CASCADE,
    secret     text NOT NULL CHECK (secret LIKE 'whsec\_%'),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- One row per event to deliver. dedup_key makes an event of a run
-- inserted at most once ('ended' for the end, whichever way it ended): the
-- transaction that ends the run inserts it and its River job together.
-- msg_id is the webhook-id of every attempt; payload is the body, written
-- at the first attempt and sent unchanged by the others.
CREATE TABLE gb_webhook_deliveries (
    id         bigserial PRIMARY KEY,
    run_id     bigint NOT NULL REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    event      text NOT NULL,
    dedup_key  text NOT NULL,
    url        text NOT NULL,
    msg_id     text NOT NULL UNIQUE,
    status     text NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'delivered', 'refused', 'failed')),
    payload    text,
    attempts   int NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, dedup_key)
);

-- Every attempt of a delivery: the receiver's HTTP status (NULL when none
-- answered), what gb made of it, and why.
CREATE TABLE gb_webhook_attempts (
    id          bigserial PRIMARY KEY,
    delivery_id bigint NOT NULL REFERENCES gb_webhook_deliveries (id) ON DELETE CASCADE,
    attempt     int NOT NULL,
    http_status int,
    outcome     text NOT NULL CHECK (outcome IN ('delivered', 'retrying', 'refused', 'failed')),
    error       text NOT NULL DEFAULT '',
    duration_ms int NOT NULL DEFAULT 0,
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX gb_webhook_attempts_delivery_idx ON gb_webhook_attempts (delivery_id, id);

-- +goose Down
DROP TABLE gb_webhook_attempts;
DROP TABLE gb_webhook_deliveries;
DROP TABLE gb_webhook_secrets;
ALTER TABLE gb_agent_research_runs DROP COLUMN webhook_url;
ALTER TABLE gb_users DROP COLUMN webhook_url;
