-- +goose Up
-- A note an agent remembers belongs to its research tree, not to a
-- dataset: tree_id is the tree's root, and the note goes when the tree
-- is deleted. A note has no dataset (so loading and counting a dataset
-- never sees notes) and a loaded document no tree; run_id still names the
-- run that wrote the note, NULL once that sub-agent alone was deleted.
ALTER TABLE gb_kb_documents
    ADD COLUMN tree_id bigint REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    ALTER COLUMN dataset DROP NOT NULL;

-- Existing notes go to the tree of the run that wrote them; the notes of
-- runs already deleted (run_id set to NULL) belonged to deleted trees and
-- are deleted.
UPDATE gb_kb_documents d SET tree_id = r.root_id, dataset = NULL
FROM gb_agent_research_runs r
WHERE d.run_id = r.id;
DELETE FROM gb_kb_documents
WHERE run_id IS NULL AND tree_id IS NULL AND source LIKE 'note:run-%'
  AND content_hash IS NULL AND root IS NULL;

ALTER TABLE gb_kb_documents ADD CONSTRAINT gb_kb_documents_dataset_or_tree
    CHECK ((dataset IS NULL) <> (tree_id IS NULL));
CREATE INDEX gb_kb_documents_tree_idx ON gb_kb_documents (tree_id) WHERE tree_id IS NOT NULL;

-- The trees whose notes a research reads besides its own, named by its
-- owner when it starts (notes_from): both are root runs of the same user.
-- A row goes with either tree.
CREATE TABLE gb_kb_notes_from (
    tree_id      bigint NOT NULL REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    from_tree_id bigint NOT NULL REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    PRIMARY KEY (tree_id, from_tree_id),
    CHECK (tree_id <> from_tree_id)
);
CREATE INDEX gb_kb_notes_from_from_idx ON gb_kb_notes_from (from_tree_id);

-- +goose Down
DROP TABLE gb_kb_notes_from;
ALTER TABLE gb_kb_documents DROP CONSTRAINT gb_kb_documents_dataset_or_tree;
UPDATE gb_kb_documents d SET dataset = r.dataset
FROM gb_agent_research_runs r
WHERE d.tree_id = r.id;
ALTER TABLE gb_kb_documents
    DROP COLUMN tree_id,
    ALTER COLUMN dataset SET NOT NULL;
