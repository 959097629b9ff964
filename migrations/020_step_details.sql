-- +goose Up
-- What a step took besides its tokens, recorded by its commit: the model
-- that answered, when the step started, how long the answered model call
-- and the step's tools took (ms), the model calls of the step that did not
-- give its answer (retries, and their outcomes as the ledger recorded them:
-- rate limited, context_length_exceeded, unusable answer, ...), and the
-- compaction its request went through, if any ({"level", "stubbed",
-- "trimmed", "tokens_before", "tokens_after"} in gb's own token count).
-- seq orders the steps of a tree as they were committed: it is the cursor
-- of GET /v1/gb/research/{id}/steps.
ALTER TABLE gb_agent_research_steps
    ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY,
    ADD COLUMN model text NOT NULL DEFAULT '',
    ADD COLUMN started_at timestamptz,
    ADD COLUMN model_ms int NOT NULL DEFAULT 0 CHECK (model_ms >= 0),
    ADD COLUMN tool_ms int NOT NULL DEFAULT 0 CHECK (tool_ms >= 0),
    ADD COLUMN retries int NOT NULL DEFAULT 0 CHECK (retries >= 0),
    ADD COLUMN retry_outcomes text[] NOT NULL DEFAULT '{}',
    ADD COLUMN compaction jsonb;
CREATE UNIQUE INDEX gb_steps_run_seq_idx ON gb_agent_research_steps (run_id, seq);

-- +goose Down
DROP INDEX gb_steps_run_seq_idx;
ALTER TABLE gb_agent_research_steps
    DROP COLUMN compaction,
    DROP COLUMN retry_outcomes,
    DROP COLUMN retries,
    DROP COLUMN tool_ms,
    DROP COLUMN model_ms,
    DROP COLUMN started_at,
    DROP COLUMN model,
    DROP COLUMN seq;
