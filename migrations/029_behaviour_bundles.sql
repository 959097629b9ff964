-- +goose Up
-- What shapes a research's behaviour, stored once by the sha256 of its
-- content (jobs/behaviour.go): the prompt parts, the sub-agent types, the
-- tool schemas, the model profiles and the limits in effect, as JSON. The
-- content is text, not jsonb, so that it comes back byte for byte (jsonb
-- would reorder the keys of the tool schemas a model is sent) and its hash
-- can be checked; content::jsonb reads it. version is the gb version that
-- first stored it. A research is pinned to the bundle
-- its first step used (pinned, on every run of its tree); a deploy that
-- changes the bundle leaves it on its own unless GB_PIN=latest.
CREATE TABLE gb_behaviour_bundles (
    hash text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
    content text NOT NULL,
    version text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE gb_agent_research_runs ADD COLUMN pinned text REFERENCES gb_behaviour_bundles (hash);

-- Each step records the gb version whose code ran it and the bundle it
-- was made with.
ALTER TABLE gb_agent_research_steps
    ADD COLUMN version text NOT NULL DEFAULT '',
    ADD COLUMN behaviour text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE gb_agent_research_steps DROP COLUMN behaviour, DROP COLUMN version;
ALTER TABLE gb_agent_research_runs DROP COLUMN pinned;
DROP TABLE gb_behaviour_bundles;
