-- +goose Up
-- The circuit breaker of a provider's model, shared by every worker beside
-- its rate limit (gb_rate_limits, same key). failures counts the transient
-- failures in a row (5xx, overloaded, connection refused or reset, a
-- timeout before the answer); at the threshold the breaker opens
-- (opened_at). While open, one call at a time goes out as a probe: the
-- worker that claims it holds probe_until (a lease, so that a dead prober
-- does not block the others), and the next probe may not leave before
-- next_probe_at. A probe that succeeds closes it (opened_at NULL, failures
-- 0). first_error and last_error are the provider's words, first_failed_at
-- when the run of failures began; probes counts the probes sent since the
-- breaker last opened.
CREATE TABLE gb_provider_breakers (
    key             text PRIMARY KEY,
    provider        text NOT NULL DEFAULT '',
    failures        int NOT NULL DEFAULT 0 CHECK (failures >= 0),
    opened_at       timestamptz,
    first_failed_at timestamptz,
    last_failed_at  timestamptz,
    first_error     text NOT NULL DEFAULT '',
    last_error      text NOT NULL DEFAULT '',
    next_probe_at   timestamptz NOT NULL DEFAULT '-infinity',
    probe_until     timestamptz NOT NULL DEFAULT '-infinity',
    probes          bigint NOT NULL DEFAULT 0,
    closed_at       timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- What a run waiting out its provider knows of the outage (state
-- waiting_provider): the provider and model, when the run first met it,
-- the first and last error, how many tries it made and when it tries next.
-- It is durable so that the outage horizon counts from the first failure
-- whatever worker restarts between the tries; NULL when the run is not
-- waiting for its provider.
ALTER TABLE gb_agent_research_runs ADD COLUMN provider_wait jsonb;

-- +goose Down
ALTER TABLE gb_agent_research_runs DROP COLUMN provider_wait;
DROP TABLE gb_provider_breakers;
