-- +goose Up
-- A knowledge-base document a run read is a source too (kind 'kb'), so the
-- sources of a run list what its report cites: url is the document's
-- source, title its title, requested_url names it in the knowledge base
-- ("kb:<dataset>:<id>"), body is the text the read returned (the part of
-- the document read) and bytes its size, so the citation check compares a
-- claim with exactly what the agent read.
ALTER TABLE gb_sources DROP CONSTRAINT gb_sources_kind_check;
ALTER TABLE gb_sources ADD CONSTRAINT gb_sources_kind_check CHECK (kind IN ('fetch', 'result', 'kb'));

-- +goose Down
DELETE FROM gb_sources WHERE kind = 'kb';
ALTER TABLE gb_sources DROP CONSTRAINT gb_sources_kind_check;
ALTER TABLE gb_sources ADD CONSTRAINT gb_sources_kind_check CHECK (kind IN ('fetch', 'result'));
