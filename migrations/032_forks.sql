-- +goose Up
-- A research forked from another one's step (jobs/fork.go): the run it was
-- forked from, the step of that run's root it replays up to, and the
-- instruction its owner gave for the first live step. The steps a fork
-- copied from its original are marked replayed: they made no model call
-- and cost the fork nothing.
ALTER TABLE gb_agent_research_runs
    ADD COLUMN forked_from bigint REFERENCES gb_agent_research_runs (id) ON DELETE SET NULL,
    ADD COLUMN fork_step int CHECK (fork_step >= 0),
    ADD COLUMN fork_instruction text NOT NULL DEFAULT ''
        CHECK (char_length(fork_instruction) <= 4000);
ALTER TABLE gb_agent_research_steps ADD COLUMN replayed boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE gb_agent_research_steps DROP COLUMN replayed;
ALTER TABLE gb_agent_research_runs DROP COLUMN fork_instruction, DROP COLUMN fork_step, DROP COLUMN forked_from;
