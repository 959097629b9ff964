-- +goose Up
-- A root research started with approve_plan proposes the sub-agents it
-- means to spawn (propose_plan) before it may spawn any, and parks for its
-- owner's decision the way ask_owner parks for an answer: wait_kind
-- 'owner', wait_call_id the propose_plan call, wait_until its deadline.
--
-- plan is the last plan proposed (a JSON array of sub-agents), or the list
-- the owner approved, edited or not; plan_state says where it stands:
-- '' (none proposed yet), 'proposed' (the root waits on it), 'approved',
-- 'rejected' or 'expired' (its deadline came first). plan_note is the
-- owner's note with the decision, and plan_call_id the id of the last
-- propose_plan call, so that the resumed step knows which call to answer.
ALTER TABLE gb_agent_research_runs
    ADD COLUMN approve_plan boolean NOT NULL DEFAULT false,
    ADD COLUMN plan jsonb,
    ADD COLUMN plan_state text NOT NULL DEFAULT ''
        CHECK (plan_state IN ('', 'proposed', 'approved', 'rejected', 'expired')),
    ADD COLUMN plan_note text NOT NULL DEFAULT '' CHECK (char_length(plan_note) <= 2000),
    ADD COLUMN plan_call_id text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE gb_agent_research_runs
    DROP COLUMN plan_call_id,
    DROP COLUMN plan_note,
    DROP COLUMN plan_state,
    DROP COLUMN plan,
    DROP COLUMN approve_plan;
