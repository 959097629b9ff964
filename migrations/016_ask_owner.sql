-- +goose Up
-- A root research started with interactive may ask its owner a question
-- (ask_owner). The call parks the root like any other wait (status
-- 'waiting', no job): wait_kind 'owner', wait_call_id naming the call and
-- wait_until its deadline, when its wake job (gb_message_wake, the job of
-- every parked call's deadline) resumes it without an answer.
--
-- interactive says the root may ask; answer_timeout_s is how long each of
-- its questions waits for an answer. question is the question a parked
-- root waits on ('' when it waits on none). answer is what resumed its
-- last question: the owner's text, or NULL when its deadline did; the
-- resumed step gives it to the model, however often it is retried, and the
-- next question clears it.
ALTER TABLE gb_agent_research_runs
    ADD COLUMN interactive boolean NOT NULL DEFAULT false,
    ADD COLUMN answer_timeout_s int NOT NULL DEFAULT 86400
        CHECK (answer_timeout_s BETWEEN 5 AND 604800),
    ADD COLUMN question text NOT NULL DEFAULT '' CHECK (char_length(question) <= 2000),
    ADD COLUMN answer text CHECK (char_length(answer) <= 10000);

ALTER TABLE gb_agent_research_runs DROP CONSTRAINT gb_agent_research_runs_wait_kind_check;
ALTER TABLE gb_agent_research_runs ADD CONSTRAINT gb_agent_research_runs_wait_kind_check
    CHECK (wait_kind IN ('subagents', 'messages', 'owner'));

-- +goose Down
UPDATE gb_agent_research_runs SET wait_kind = 'messages' WHERE wait_kind = 'owner';
ALTER TABLE gb_agent_research_runs DROP CONSTRAINT gb_agent_research_runs_wait_kind_check;
ALTER TABLE gb_agent_research_runs ADD CONSTRAINT gb_agent_research_runs_wait_kind_check
    CHECK (wait_kind IN ('subagents', 'messages'));
ALTER TABLE gb_agent_research_runs
    DROP COLUMN answer,
    DROP COLUMN question,
    DROP COLUMN answer_timeout_s,
    DROP COLUMN interactive;
