-- +goose Up
-- The context window a provider showed a model to have, smaller than gb's
-- profile said: learned from a context_length_exceeded answer (the number
-- it names, or a shrink of the window in force when it names none) and read
-- by every worker at the start of a step. A smaller window only ever
-- replaces a larger one; deleting the row forgets it.
CREATE TABLE gb_model_windows (
    model         text PRIMARY KEY,
    window_tokens int NOT NULL CHECK (window_tokens > 0),
    -- refused is the size of the request (prompt and completion cap, as
    -- the provider counted or gb estimated) that taught the window.
    refused       int NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- The configured limits of a key, apart from the limits in force (rpm,
-- tpm): a lower limit in the provider's headers governs, and a higher one
-- never passes the configured one. A key whose configuration is removed
-- loses both (configured false) and is governed by the provider's headers.
ALTER TABLE gb_rate_limits
    ADD COLUMN cfg_rpm int CHECK (cfg_rpm > 0),
    ADD COLUMN cfg_tpm int CHECK (cfg_tpm > 0);
UPDATE gb_rate_limits SET cfg_rpm = rpm, cfg_tpm = tpm WHERE configured;

-- +goose Down
ALTER TABLE gb_rate_limits
    DROP COLUMN cfg_tpm,
    DROP COLUMN cfg_rpm;
DROP TABLE gb_model_windows;
