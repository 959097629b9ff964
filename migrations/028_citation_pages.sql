-- +goose Up
-- A citation may name a page of its source ("[3, p. 7]"); the check keeps
-- the page the claim cites and the page (slide, sheet) its passage is on,
-- as a reader cites it ("p. 7"), for sources that have pages (jobs/doctext).
ALTER TABLE gb_citations
    ADD COLUMN page integer NOT NULL DEFAULT 0 CHECK (page >= 0),
    ADD COLUMN passage_page text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE gb_citations DROP COLUMN page, DROP COLUMN passage_page;
