-- +goose Up
-- A reader long-polling a tree's events holds a lease here while it waits:
-- waiting_until is the end of its wait. The statement that records an event
-- sends NOTIFY gb_events (payload: the root id) only while a lease is live,
-- so nobody pays for a notification no one waits for. The events table is
-- the truth; the notification only wakes the reader to read it again.
CREATE TABLE gb_event_waiters (
    root_id       bigint PRIMARY KEY REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    waiting_until timestamptz
);

-- +goose Down
DROP TABLE gb_event_waiters;
