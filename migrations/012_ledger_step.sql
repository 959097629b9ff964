-- +goose Up
-- A job may make several consecutive steps of its run, each its own
-- transaction with its own model call: a call in the ledger is named by its
-- job, the job's attempt and the step it makes.
ALTER TABLE gb_model_calls ADD COLUMN step int NOT NULL DEFAULT 0;
ALTER TABLE gb_model_calls DROP CONSTRAINT gb_model_calls_pkey;
ALTER TABLE gb_model_calls ADD PRIMARY KEY (job_id, attempt, step);

-- An event goes with its run (gb_events_run_fk), and every run of a tree
-- with its root: the foreign key to the root only cost each insert a check.
ALTER TABLE gb_agent_research_events DROP CONSTRAINT gb_agent_research_events_root_id_fkey;

-- The jobs of a run, found by its id: a lookup through River's GIN index
-- on args reads the posting list of the key run_id, which every job has,
-- so it grew with the table. River's tables come from rivermigrate, which
-- runs first.
CREATE INDEX gb_river_job_run_idx ON river_job (((args->>'run_id')::bigint), id)
    WHERE kind IN ('gb_step', 'gb_timeout', 'gb_message_wake');

-- A run's row changes at every step: room on its page keeps the update HOT
-- (no new index entries).
ALTER TABLE gb_agent_research_runs SET (fillfactor = 70);

-- When a run's tree started: its step jobs are queued at that time, so
-- that under load the steps of older trees go first.
ALTER TABLE gb_agent_research_runs ADD COLUMN tree_started_at timestamptz NOT NULL DEFAULT now();
UPDATE gb_agent_research_runs r SET tree_started_at = t.created_at
    FROM gb_agent_research_runs t WHERE t.id = r.root_id;

-- +goose Down
ALTER TABLE gb_agent_research_runs DROP COLUMN tree_started_at;
ALTER TABLE gb_agent_research_runs RESET (fillfactor);
DROP INDEX gb_river_job_run_idx;
ALTER TABLE gb_agent_research_events ADD CONSTRAINT gb_agent_research_events_root_id_fkey
    FOREIGN KEY (root_id) REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE;
-- Calls of later steps of one job attempt have no place in the old key.
DELETE FROM gb_model_calls WHERE step <> (SELECT min(step) FROM gb_model_calls c
    WHERE c.job_id = gb_model_calls.job_id AND c.attempt = gb_model_calls.attempt);
ALTER TABLE gb_model_calls DROP CONSTRAINT gb_model_calls_pkey;
ALTER TABLE gb_model_calls ADD PRIMARY KEY (job_id, attempt);
ALTER TABLE gb_model_calls DROP COLUMN step;
