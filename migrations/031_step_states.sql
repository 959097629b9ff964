-- +goose Up
-- The states a run goes through in a step (the state of the step's tools,
-- then thinking at the next step when the same job goes on) are kept on the
-- step's row rather than as rows of gb_agent_research_states: two rows
-- fewer a step. A run's history (jobs.States) reads both, in the order
-- they were written (each at its clock_timestamp()).
ALTER TABLE gb_agent_research_steps
    ADD COLUMN states text[] NOT NULL DEFAULT '{}',
    ADD COLUMN state_steps int[] NOT NULL DEFAULT '{}',
    ADD CONSTRAINT gb_steps_states_check CHECK (cardinality(states) = cardinality(state_steps));

-- +goose Down
ALTER TABLE gb_agent_research_steps DROP COLUMN state_steps, DROP COLUMN states;
