-- +goose Up
-- An open event stream (GET /v1/gb/research/{id}/events/stream) holds a row
-- here while it is open. open_until is pushed on as the stream goes, so the
-- row of a stream whose process died stops counting by itself. The API
-- counts a user's live rows under the user's row lock before it opens one
-- more, which bounds the streams a user has open at once across every
-- process. The id is drawn by gen_random_uuid(), not a sequence: nextval()
-- would pin an RDS Proxy session.
CREATE TABLE gb_event_streams (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id    bigint NOT NULL REFERENCES gb_users (id) ON DELETE CASCADE,
    root_id    bigint NOT NULL,
    open_until timestamptz NOT NULL
);
CREATE INDEX gb_event_streams_user_idx ON gb_event_streams (user_id, open_until);

-- +goose Down
DROP TABLE gb_event_streams;
