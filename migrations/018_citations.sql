-- +goose Up
-- The citation check of each report (jobs/cite): how a research treats its
-- report's citations (citations_mode: 'off', 'flag' or 'revise'; a
-- sub-agent follows its root), the counts of the last check of the run's
-- report (citations, null before one) and, when the root revised its
-- report, the counts of the check before the revision (citations_before).
-- Both are JSON objects {claims, supported, weak, unsupported, unread,
-- uncited}.
ALTER TABLE gb_agent_research_runs
    ADD COLUMN citations_mode text NOT NULL DEFAULT 'flag'
        CHECK (citations_mode IN ('off', 'flag', 'revise')),
    ADD COLUMN citations jsonb,
    ADD COLUMN citations_before jsonb;

-- One row per claim–source pair of a checked report, and one per uncited
-- claim (marker 0, verdict 'uncited'). round is 0 for the first check and
-- 1 for the check of a revised report; the last round is the run's.
-- passage is the text of the best passage found in what the tree read,
-- score the share of the claim's content words in it, judged_by what gave
-- the verdict ('lexical', or the verification model's name).
CREATE TABLE gb_citations (
    run_id      bigint NOT NULL REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    round       int NOT NULL CHECK (round >= 0),
    claim_index int NOT NULL CHECK (claim_index >= 0),
    claim       text NOT NULL,
    marker      int NOT NULL CHECK (marker >= 0),
    ref         text NOT NULL DEFAULT '',
    verdict     text NOT NULL CHECK (verdict IN ('supported', 'weak', 'unsupported', 'unread', 'uncited')),
    claim_verdict text NOT NULL CHECK (claim_verdict IN ('supported', 'weak', 'unsupported', 'unread', 'uncited')),
    passage     text NOT NULL DEFAULT '',
    score       real NOT NULL DEFAULT 0,
    reason      text NOT NULL DEFAULT '',
    judged_by   text NOT NULL DEFAULT 'lexical',
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, round, claim_index, marker)
);

-- +goose Down
DROP TABLE gb_citations;
ALTER TABLE gb_agent_research_runs
    DROP COLUMN citations_before,
    DROP COLUMN citations,
    DROP COLUMN citations_mode;
