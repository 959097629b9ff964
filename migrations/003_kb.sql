-- +goose Up
CREATE TABLE gb_kb_datasets (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE gb_kb_documents (
    id         bigserial PRIMARY KEY,
    dataset    text NOT NULL REFERENCES gb_kb_datasets (name) ON DELETE CASCADE,
    source     text NOT NULL,
    title      text NOT NULL,
    body       text NOT NULL,
    -- the run that remembered this note; null for loaded documents
    run_id     bigint REFERENCES gb_agent_research_runs (id) ON DELETE SET NULL,
    tsv        tsvector GENERATED ALWAYS AS (
                   setweight(to_tsvector('english', title), 'A') ||
                   setweight(to_tsvector('english', left(body, 200000)), 'B')) STORED,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (dataset, source)
);
CREATE INDEX gb_kb_documents_tsv_idx ON gb_kb_documents USING gin (tsv);

-- +goose Down
DROP TABLE gb_kb_documents;
DROP TABLE gb_kb_datasets;
