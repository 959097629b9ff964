-- +goose Up
-- One row per paid model call, keyed by the step job and its attempt, so a
-- call is counted once whether its step commits or not. A row is
-- 'reserved' while the call is in flight in a tree with a budget (its
-- reservation counts against the budget while the job's attempt runs),
-- 'settled' once its usage is added to its run, 'released' when the call
-- failed and cost nothing.
CREATE TABLE gb_model_calls (
    job_id            bigint NOT NULL,
    attempt           int NOT NULL,
    run_id            bigint NOT NULL REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    root_id           bigint NOT NULL,
    status            text NOT NULL CHECK (status IN ('reserved', 'settled', 'released')),
    reserved_tokens   bigint NOT NULL DEFAULT 0,
    reserved_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    cost_usd          numeric(14, 6) NOT NULL DEFAULT 0,
    committed         boolean NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, attempt)
);
CREATE INDEX gb_model_calls_run_idx ON gb_model_calls (run_id);
CREATE INDEX gb_model_calls_reserved_idx ON gb_model_calls (root_id) WHERE status = 'reserved';

-- Everything that belongs to a run goes with it.
DELETE FROM gb_inboxes i WHERE NOT EXISTS (SELECT 1 FROM gb_agent_research_runs r WHERE r.id = i.run_id);
ALTER TABLE gb_inboxes ADD CONSTRAINT gb_inboxes_run_fk
    FOREIGN KEY (run_id) REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE;
DELETE FROM gb_messages m WHERE NOT EXISTS (SELECT 1 FROM gb_agent_research_runs r WHERE r.id = m.to_id);
ALTER TABLE gb_messages ADD CONSTRAINT gb_messages_to_fk
    FOREIGN KEY (to_id) REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE;
DELETE FROM gb_agent_research_events e WHERE NOT EXISTS (SELECT 1 FROM gb_agent_research_runs r WHERE r.id = e.run_id);
ALTER TABLE gb_agent_research_events ADD CONSTRAINT gb_events_run_fk
    FOREIGN KEY (run_id) REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE;
CREATE INDEX gb_events_run_idx ON gb_agent_research_events (run_id);
CREATE INDEX gb_messages_from_idx ON gb_messages (from_id) WHERE from_id <> 0;

-- +goose Down
DROP INDEX gb_messages_from_idx;
DROP INDEX gb_events_run_idx;
ALTER TABLE gb_agent_research_events DROP CONSTRAINT gb_events_run_fk;
ALTER TABLE gb_messages DROP CONSTRAINT gb_messages_to_fk;
ALTER TABLE gb_inboxes DROP CONSTRAINT gb_inboxes_run_fk;
DROP TABLE gb_model_calls;
