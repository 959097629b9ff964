-- +goose Up
-- How many sub-agents a tree may have: a user's own bound (null: the
-- server's), and the bound each run of a tree carries from its root's
-- start (0: no spawning; the spec's 10 stays the ceiling).
ALTER TABLE gb_users ADD COLUMN max_subagents int CHECK (max_subagents BETWEEN 0 AND 10);
ALTER TABLE gb_agent_research_runs ADD COLUMN max_subagents int NOT NULL DEFAULT 10
    CHECK (max_subagents BETWEEN 0 AND 10);

-- The reconciler looks at the runs not ended on every maintenance pass.
CREATE INDEX gb_runs_unended_idx ON gb_agent_research_runs (status, id)
    WHERE status IN ('queued', 'working', 'waiting');

-- +goose Down
DROP INDEX gb_runs_unended_idx;
ALTER TABLE gb_agent_research_runs DROP COLUMN max_subagents;
ALTER TABLE gb_users DROP COLUMN max_subagents;
