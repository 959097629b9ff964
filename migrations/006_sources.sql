-- +goose Up
-- What the agents of a tree read from the web: every page a run fetched
-- (kind 'fetch', with the readable text it got, which siblings reuse as a
-- cache) and every search result it was shown (kind 'result').
CREATE TABLE gb_sources (
    id            bigserial PRIMARY KEY,
    root_id       bigint NOT NULL REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    run_id        bigint NOT NULL REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    step          int NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('fetch', 'result')),
    url           text NOT NULL,
    requested_url text NOT NULL DEFAULT '',
    title         text NOT NULL DEFAULT '',
    status        int NOT NULL DEFAULT 0,
    bytes         bigint NOT NULL DEFAULT 0,
    content_type  text NOT NULL DEFAULT '',
    error         text NOT NULL DEFAULT '',
    -- true when the page came from the tree's cache instead of the web
    cached        boolean NOT NULL DEFAULT false,
    -- the readable text of a fresh fetch; null otherwise
    body          text,
    at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gb_sources_run_idx ON gb_sources (run_id, id);
CREATE INDEX gb_sources_cache_idx ON gb_sources (root_id, requested_url, id DESC) WHERE kind = 'fetch' AND body IS NOT NULL;

-- +goose Down
DROP TABLE gb_sources;
