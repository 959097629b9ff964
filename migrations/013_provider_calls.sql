-- +goose Up
-- What a provider bills beyond plain tokens: prompt tokens read from its
-- cache (billed at a lower rate) and a reasoning model's thinking (billed
-- as output). Costs are kept to 1e-10 dollars, so that the sum of a tree's
-- small cached calls equals the provider's bill rather than its rounding.
ALTER TABLE gb_agent_research_runs
    ADD COLUMN cached_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN reasoning_tokens bigint NOT NULL DEFAULT 0,
    ALTER COLUMN cost_usd TYPE numeric(20, 10);
ALTER TABLE gb_agent_research_steps
    ADD COLUMN cached_tokens int NOT NULL DEFAULT 0,
    ADD COLUMN reasoning_tokens int NOT NULL DEFAULT 0,
    ALTER COLUMN cost_usd TYPE numeric(20, 10);

-- Every model call has a row of its own, written before the call with its
-- estimate and settled after it, whatever happens to its step: an
-- interrupted job's retry is a new call with a new row. A row is 'queued'
-- while it holds rate-limit capacity for a call that may start at
-- not_before, 'reserved' while the call is in flight (its estimate counts
-- against the tree's budget; job_attempted_at names the job attempt that
-- makes it, so that the maintenance pass can tell a dead one), 'settled' once its usage is added to its run
-- (estimated when the worker died with the call in flight and the
-- maintenance pass settled it with its estimate), 'released' when the
-- provider did not bill it. closing marks a root's closing call, which
-- may use the share of the budget kept for the report. est_prompt_tokens is gb's own count of the
-- prompt (llm.EstimatePromptTokens): beside the provider's, it tells how
-- far gb's count falls short for the next request of the run.
ALTER TABLE gb_model_calls DROP CONSTRAINT gb_model_calls_pkey;
ALTER TABLE gb_model_calls
    ADD COLUMN id bigserial PRIMARY KEY,
    ADD COLUMN model text NOT NULL DEFAULT '',
    ADD COLUMN job_attempted_at timestamptz,
    ADD COLUMN not_before timestamptz,
    ADD COLUMN max_completion_tokens int NOT NULL DEFAULT 0,
    ADD COLUMN est_prompt_tokens int NOT NULL DEFAULT 0,
    ADD COLUMN cached_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN reasoning_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN estimated boolean NOT NULL DEFAULT false,
    ADD COLUMN closing boolean NOT NULL DEFAULT false,
    ADD COLUMN outcome text NOT NULL DEFAULT '',
    ADD COLUMN settled_at timestamptz,
    ALTER COLUMN cost_usd TYPE numeric(20, 10),
    ALTER COLUMN reserved_cost_usd TYPE numeric(20, 10);
ALTER TABLE gb_model_calls DROP CONSTRAINT gb_model_calls_status_check;
ALTER TABLE gb_model_calls ADD CONSTRAINT gb_model_calls_status_check
    CHECK (status IN ('queued', 'reserved', 'settled', 'released'));
CREATE INDEX gb_model_calls_open_idx ON gb_model_calls (run_id, step) WHERE status IN ('queued', 'reserved');

-- The capacity of a provider's key (and model), shared by every worker: a
-- token bucket per limit, kept as the time it is full again (tat: the
-- theoretical arrival time of GCRA). rpm and tpm are the limits per minute
-- (null: none known); configured ones are never replaced by what the
-- provider's headers say. blocked_until holds every call back after a 429.
CREATE TABLE gb_rate_limits (
    key           text PRIMARY KEY,
    rpm           int CHECK (rpm > 0),
    tpm           int CHECK (tpm > 0),
    configured    boolean NOT NULL DEFAULT false,
    req_tat       timestamptz NOT NULL DEFAULT now(),
    tok_tat       timestamptz NOT NULL DEFAULT now(),
    blocked_until timestamptz NOT NULL DEFAULT '-infinity',
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose StatementBegin
-- gb_take_capacity takes the capacity of one call of tokens tokens (its
-- prompt and its completion cap, as providers count them) and returns when
-- the call may start: now, or later when the key's capacity is spoken for
-- (the capacity is taken for that time, so a caller that comes back then
-- finds it). It returns infinity, taking nothing, when the call alone is
-- more than the token limit. A key with no row has no known limit. With
-- request false it charges tokens more to a call already admitted (which
-- turned out larger than it was queued with) and returns now.
CREATE FUNCTION gb_take_capacity(k text, tokens int, request boolean) RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
    r gb_rate_limits%ROWTYPE;
    t timestamptz := clock_timestamp();
    start timestamptz;
BEGIN
    SELECT * INTO r FROM gb_rate_limits WHERE key = k FOR UPDATE;
    IF NOT FOUND THEN
        RETURN t;
    END IF;
    IF NOT request THEN
        UPDATE gb_rate_limits SET tok_tat = greatest(tok_tat, t) + make_interval(secs => tokens * 60.0 / tpm),
            updated_at = t
        WHERE key = k AND tpm IS NOT NULL AND tokens > 0;
        RETURN t;
    END IF;
    IF r.tpm IS NOT NULL AND tokens > r.tpm THEN
        RETURN 'infinity';
    END IF;
    -- A bucket of a minute's limit refills at limit/60 a second: a cost c
    -- fits at time s when tat - (limit - c)·60/limit <= s.
    -- Only nine tenths of a bucket are ever handed out at once: the rest
    -- absorbs calls that reach the provider later than they were let go
    -- and earlier ones that reach it after them.
    start := greatest(t, r.blocked_until);
    IF r.rpm IS NOT NULL THEN
        start := greatest(start, r.req_tat - make_interval(secs => (0.9 * r.rpm - 1) * 60.0 / r.rpm));
    END IF;
    IF r.tpm IS NOT NULL THEN
        start := greatest(start, r.tok_tat - make_interval(secs => (0.9 * r.tpm - tokens) * 60.0 / r.tpm));
    END IF;
    UPDATE gb_rate_limits SET
        req_tat = CASE WHEN rpm IS NULL THEN req_tat
            ELSE greatest(req_tat, start) + make_interval(secs => 60.0 / rpm) END,
        tok_tat = CASE WHEN tpm IS NULL THEN tok_tat
            ELSE greatest(tok_tat, start) + make_interval(secs => tokens * 60.0 / tpm) END,
        updated_at = t
    WHERE key = k;
    RETURN start;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION gb_take_capacity(text, int, boolean);
DROP TABLE gb_rate_limits;
DROP INDEX gb_model_calls_open_idx;
DELETE FROM gb_model_calls WHERE status = 'queued';
ALTER TABLE gb_model_calls DROP CONSTRAINT gb_model_calls_status_check;
ALTER TABLE gb_model_calls ADD CONSTRAINT gb_model_calls_status_check
    CHECK (status IN ('reserved', 'settled', 'released'));
-- Calls of one job attempt and step beyond the first have no place in the old key.
DELETE FROM gb_model_calls c WHERE EXISTS (SELECT 1 FROM gb_model_calls d
    WHERE d.job_id = c.job_id AND d.attempt = c.attempt AND d.step = c.step AND d.id < c.id);
ALTER TABLE gb_model_calls DROP CONSTRAINT gb_model_calls_pkey;
ALTER TABLE gb_model_calls
    DROP COLUMN id, DROP COLUMN model, DROP COLUMN job_attempted_at, DROP COLUMN not_before, DROP COLUMN max_completion_tokens, DROP COLUMN est_prompt_tokens, DROP COLUMN closing,
    DROP COLUMN cached_tokens, DROP COLUMN reasoning_tokens, DROP COLUMN estimated,
    DROP COLUMN outcome, DROP COLUMN settled_at,
    ALTER COLUMN cost_usd TYPE numeric(14, 6),
    ALTER COLUMN reserved_cost_usd TYPE numeric(14, 6);
ALTER TABLE gb_model_calls ADD PRIMARY KEY (job_id, attempt, step);
ALTER TABLE gb_agent_research_steps
    DROP COLUMN cached_tokens, DROP COLUMN reasoning_tokens,
    ALTER COLUMN cost_usd TYPE numeric(14, 6);
ALTER TABLE gb_agent_research_runs
    DROP COLUMN cached_tokens, DROP COLUMN reasoning_tokens,
    ALTER COLUMN cost_usd TYPE numeric(14, 6);
