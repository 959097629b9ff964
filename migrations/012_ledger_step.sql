-- +goose Up
-- A job may make several consecutive steps of its run, each its own
-- transaction with its own model call: a call in the ledger is named by its
-- job, the job's attempt and the step it makes.
ALTER TABLE gb_model_calls ADD COLUMN step int NOT NULL DEFAULT 0;
ALTER TABLE gb_model_calls DROP CONSTRAINT gb_model_calls_pkey;
ALTER TABLE gb_model_calls ADD PRIMARY KEY (job_id, attempt, step);
