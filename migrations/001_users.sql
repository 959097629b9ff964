-- +goose Up
CREATE TABLE gb_users (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9._@-]{1,64}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored as the SHA-256 of the key; the key itself is shown once.
CREATE TABLE gb_api_keys (
    hash       bytea PRIMARY KEY,
    prefix     text NOT NULL,
    user_id    bigint NOT NULL REFERENCES gb_users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE gb_api_keys;
DROP TABLE gb_users;
