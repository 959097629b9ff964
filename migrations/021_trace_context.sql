-- +goose Up
-- The trace context of a run, set when the run is created by a process
-- that traces (OpenTelemetry): traceparent is the W3C traceparent of the
-- run's own span (invoke_agent), which every step job of the run continues,
-- and trace_parent_id the span id it hangs from (the API request that
-- started a research, or the spawn_subagent call that made a sub-agent;
-- '' for none). The span is recorded by the process that ends the run, with
-- this identity, so that a tree worked by many processes is one trace.
-- Both are NULL when the creating process did not trace.
ALTER TABLE gb_agent_research_runs
    ADD COLUMN traceparent text CHECK (char_length(traceparent) <= 128),
    ADD COLUMN trace_parent_id text CHECK (char_length(trace_parent_id) <= 32);

-- +goose Down
ALTER TABLE gb_agent_research_runs
    DROP COLUMN trace_parent_id,
    DROP COLUMN traceparent;
