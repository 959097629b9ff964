-- +goose Up
-- A parked run (status 'waiting', wait_call_id naming the parked call)
-- waits either for sub-agents (wait_subagents, wait_names) or for a message
-- (read_messages with a wait longer than a step blocks for): wait_kind says
-- which. A message wait ends at wait_until, when its wake job is scheduled,
-- unless a message resumes it first. wait_read_to is set when a message
-- wait resumes: the newest message of the run's inbox then. The resumed
-- step delivers the unread messages up to it, the same ones however often
-- it is retried, and a read_messages of that same step only newer ones.
-- The three are read only while wait_call_id is set.
ALTER TABLE gb_agent_research_runs
    ADD COLUMN wait_kind text NOT NULL DEFAULT 'subagents'
        CHECK (wait_kind IN ('subagents', 'messages')),
    ADD COLUMN wait_until timestamptz,
    ADD COLUMN wait_read_to bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE gb_agent_research_runs
    DROP COLUMN wait_read_to,
    DROP COLUMN wait_until,
    DROP COLUMN wait_kind;
