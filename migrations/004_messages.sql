-- +goose Up
-- An inbox exists while its agent may receive messages. waiting_until is a
-- lease set by a receiver that blocks on its inbox: a sender notifies
-- (pg_notify) only while it is in the future, so a message nobody waits for
-- costs no notifying commit. It is a hint for wake-ups; the messages table is
-- the truth.
CREATE TABLE gb_inboxes (
    run_id        bigint PRIMARY KEY,
    opened_at     timestamptz NOT NULL DEFAULT now(),
    waiting_until timestamptz
);

-- Messages stay after they are read: they are the transcript of a tree.
CREATE TABLE gb_messages (
    id        bigserial PRIMARY KEY,
    to_id     bigint NOT NULL,
    from_id   bigint NOT NULL DEFAULT 0,
    from_name text NOT NULL,
    text      text NOT NULL,
    sent_at   timestamptz NOT NULL,
    read_at   timestamptz
);
CREATE INDEX gb_messages_unread_idx ON gb_messages (to_id, id) WHERE read_at IS NULL;
CREATE INDEX gb_messages_to_idx ON gb_messages (to_id, id);

-- +goose Down
DROP TABLE gb_messages;
DROP TABLE gb_inboxes;
