-- +goose Up
CREATE TABLE gb_agent_research_runs (
    id            bigserial PRIMARY KEY,
    user_id       bigint NOT NULL REFERENCES gb_users (id) ON DELETE CASCADE,
    parent_id     bigint REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    root_id       bigint NOT NULL,
    depth         int NOT NULL DEFAULT 0,
    name          text NOT NULL DEFAULT '',
    reason        text NOT NULL DEFAULT '',
    topic         text NOT NULL,
    model         text NOT NULL,
    dataset       text NOT NULL,
    status        text NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'working', 'waiting', 'succeeded', 'failed')),
    state         text NOT NULL DEFAULT 'queued',
    max_steps     int NOT NULL CHECK (max_steps BETWEEN 1 AND 40),
    steps         int NOT NULL DEFAULT 0,
    prompt_tokens bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    tokens        bigint NOT NULL DEFAULT 0,
    cost_usd      numeric(14, 6) NOT NULL DEFAULT 0,
    max_cost_usd  numeric(14, 6),
    max_tokens    bigint,
    -- the names of the sub-agents a parked wait_subagents call waits for, and
    -- the id of that tool call; empty when the run is not parked.
    wait_names    text[] NOT NULL DEFAULT '{}',
    wait_call_id  text NOT NULL DEFAULT '',
    report        text NOT NULL DEFAULT '',
    error         text NOT NULL DEFAULT '',
    schedule_key  text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    ended_at      timestamptz,
    UNIQUE (parent_id, name),
    UNIQUE (schedule_key)
);
CREATE INDEX gb_runs_user_idx ON gb_agent_research_runs (user_id, id DESC);
CREATE INDEX gb_runs_parent_idx ON gb_agent_research_runs (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX gb_runs_root_idx ON gb_agent_research_runs (root_id);
CREATE INDEX gb_runs_user_active_idx ON gb_agent_research_runs (user_id)
    WHERE parent_id IS NULL AND status IN ('queued', 'working', 'waiting');

CREATE TABLE gb_agent_research_states (
    id      bigserial PRIMARY KEY,
    run_id  bigint NOT NULL REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    state   text NOT NULL,
    step    int NOT NULL DEFAULT 0,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX gb_states_run_idx ON gb_agent_research_states (run_id, id);

-- One row per committed step: the messages that step appended to the
-- conversation (assistant turn and tool results), as JSON.
CREATE TABLE gb_agent_research_steps (
    run_id     bigint NOT NULL REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    step       int NOT NULL CHECK (step >= 1),
    messages   jsonb NOT NULL,
    prompt_tokens     int NOT NULL DEFAULT 0,
    completion_tokens int NOT NULL DEFAULT 0,
    cost_usd   numeric(14, 6) NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, step)
);

CREATE TABLE gb_agent_research_events (
    seq       bigserial PRIMARY KEY,
    root_id   bigint NOT NULL REFERENCES gb_agent_research_runs (id) ON DELETE CASCADE,
    run_id    bigint NOT NULL,
    parent_id bigint,
    kind      text NOT NULL,
    data      jsonb NOT NULL DEFAULT '{}',
    at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX gb_events_root_idx ON gb_agent_research_events (root_id, seq);

-- +goose Down
DROP TABLE gb_agent_research_events;
DROP TABLE gb_agent_research_steps;
DROP TABLE gb_agent_research_states;
DROP TABLE gb_agent_research_runs;
