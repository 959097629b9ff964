-- +goose Up
-- A sub-agent's type (its tools and caps, from the registry of types) and
-- the end of its wall clock, past which it ends timed_out.
ALTER TABLE gb_agent_research_runs
    ADD COLUMN agent_type text NOT NULL DEFAULT '',
    ADD COLUMN deadline timestamptz,
    DROP CONSTRAINT gb_agent_research_runs_status_check,
    ADD CONSTRAINT gb_agent_research_runs_status_check
        CHECK (status IN ('queued', 'working', 'waiting', 'succeeded', 'failed', 'timed_out'));

-- +goose Down
UPDATE gb_agent_research_runs SET status = 'failed' WHERE status = 'timed_out';
ALTER TABLE gb_agent_research_runs
    DROP CONSTRAINT gb_agent_research_runs_status_check,
    ADD CONSTRAINT gb_agent_research_runs_status_check
        CHECK (status IN ('queued', 'working', 'waiting', 'succeeded', 'failed')),
    DROP COLUMN deadline,
    DROP COLUMN agent_type;
