-- +goose Up
-- A citation may name a page of its source ("[3, p. 7]"); the check keeps
-- the page the claim cites and the page (slide, sheet) its passage is on,
-- as a reader cites it ("p. 7"), for sources that have pages (jobs/doctext).
ALTER TABLE gb_citations
    ADD COLUMN page integer NOT NULL DEFAULT 0 CHECK (page >= 0),
    ADD COLUMN passage_page text NOT NULL DEFAULT '';

-- A document loaded from a file keeps the hash of the file's bytes, so that
-- loading its folder again reads (extracts) only the files that changed.
ALTER TABLE gb_kb_documents ADD COLUMN file_hash text;

-- +goose Down
ALTER TABLE gb_kb_documents DROP COLUMN file_hash;
ALTER TABLE gb_citations DROP COLUMN page, DROP COLUMN passage_page;
