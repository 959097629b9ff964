-- +goose Up
-- The passages of knowledge-base documents, which search ranks: each is a
-- section of its document (under a Markdown heading, a Go declaration, or
-- a piece of a long section cut at paragraph ends). start_char and
-- char_len place it in the document's body, in characters; heading is
-- its section's heading and symbols the names it declares (Go), space
-- separated; first is set on a section's first passage. tsv weighs the
-- heading and symbols (A) over the text (B).
CREATE TABLE gb_kb_passages (
    document_id bigint NOT NULL REFERENCES gb_kb_documents (id) ON DELETE CASCADE,
    ord         int NOT NULL CHECK (ord >= 0),
    start_char  int NOT NULL CHECK (start_char >= 0),
    char_len    int NOT NULL CHECK (char_len >= 0),
    heading     text NOT NULL DEFAULT '' CHECK (char_length(heading) <= 300),
    symbols     text NOT NULL DEFAULT '',
    first       boolean NOT NULL DEFAULT false,
    tsv         tsvector NOT NULL,
    PRIMARY KEY (document_id, ord)
);
CREATE INDEX gb_kb_passages_tsv_idx ON gb_kb_passages USING gin (tsv);

-- content_hash is a digest of what a load wrote (title, body, passages and
-- the way they are cut), so a load skips a document that did not change;
-- root is the directory the document was loaded from, so loading it again
-- removes the documents whose files are gone. Both are NULL for notes.
ALTER TABLE gb_kb_documents
    ADD COLUMN content_hash text,
    ADD COLUMN root text;

-- Documents already stored become one passage each, with no hash, so the
-- next load of their dataset cuts them again.
INSERT INTO gb_kb_passages (document_id, ord, start_char, char_len, heading, first, tsv)
SELECT id, 0, 0, char_length(body), left(title, 300), true,
       setweight(to_tsvector('english', title), 'A') ||
       setweight(to_tsvector('english', left(body, 200000)), 'B')
FROM gb_kb_documents;

-- +goose Down
ALTER TABLE gb_kb_documents
    DROP COLUMN root,
    DROP COLUMN content_hash;
DROP TABLE gb_kb_passages;
