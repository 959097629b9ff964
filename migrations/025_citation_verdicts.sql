-- +goose Up
-- The verdicts of a claim–source pair and of a claim grow by four
-- (jobs/cite): contradicted (the passage, or the citation judge, says the
-- opposite), no_sources (the report's Sources list could not be read),
-- inference (the writer marks the claim as its own inference) and absence
-- (a claim that a source says nothing of something).
ALTER TABLE gb_citations
    DROP CONSTRAINT gb_citations_verdict_check,
    DROP CONSTRAINT gb_citations_claim_verdict_check,
    ADD CONSTRAINT gb_citations_verdict_check CHECK (verdict IN ('supported', 'weak', 'unsupported',
        'contradicted', 'unread', 'no_sources', 'uncited', 'inference', 'absence')),
    ADD CONSTRAINT gb_citations_claim_verdict_check CHECK (claim_verdict IN ('supported', 'weak', 'unsupported',
        'contradicted', 'unread', 'no_sources', 'uncited', 'inference', 'absence'));

-- +goose Down
DELETE FROM gb_citations WHERE verdict NOT IN ('supported', 'weak', 'unsupported', 'unread', 'uncited')
    OR claim_verdict NOT IN ('supported', 'weak', 'unsupported', 'unread', 'uncited');
ALTER TABLE gb_citations
    DROP CONSTRAINT gb_citations_verdict_check,
    DROP CONSTRAINT gb_citations_claim_verdict_check,
    ADD CONSTRAINT gb_citations_verdict_check CHECK (verdict IN ('supported', 'weak', 'unsupported', 'unread', 'uncited')),
    ADD CONSTRAINT gb_citations_claim_verdict_check CHECK (claim_verdict IN ('supported', 'weak', 'unsupported', 'unread', 'uncited'));
