-- +goose Up
-- How many sub-agents a tree may have: a user's own bound (null: the
-- server's), and the bound each run of a tree carries from its root's
-- start (0: no spawning; the spec's 10 stays the ceiling).
ALTER TABLE gb_users ADD COLUMN max_subagents int CHECK (max_subagents BETWEEN 0 AND 10);
ALTER TABLE gb_agent_research_runs ADD COLUMN max_subagents int NOT NULL DEFAULT 10
    CHECK (max_subagents BETWEEN 0 AND 10);

-- +goose Down
ALTER TABLE gb_agent_research_runs DROP COLUMN max_subagents;
ALTER TABLE gb_users DROP COLUMN max_subagents;
