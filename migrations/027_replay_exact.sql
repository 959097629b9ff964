-- +goose Up
-- A tool call's arguments are stored as the text the model sent, in a JSON
-- string ({"id", "name", "arguments": "<text>"}), not as a JSON object: a
-- jsonb object comes back with its keys reordered, its whitespace gone and
-- its escapes decoded, so the conversation replayed after a hand-over was
-- not the one the model had been sent, and the provider's prompt cache
-- missed from the first call on. The calls stored before are rewritten as
-- their arguments have been replayed since (jsonb's text of the object),
-- and a call the model sent invalid arguments in keeps their text.
-- +goose StatementBegin
CREATE FUNCTION gb_stored_call_027(c jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('id', coalesce(c->'id', '""'), 'name', coalesce(c->'name', '""'), 'arguments',
        CASE WHEN coalesce(c->>'invalid_arguments', '') <> '' THEN c->'invalid_arguments'
            WHEN jsonb_typeof(c->'arguments') = 'string' THEN c->'arguments'
            WHEN c->'arguments' IS NULL OR jsonb_typeof(c->'arguments') = 'null' THEN '"{}"'::jsonb
            ELSE to_jsonb((c->'arguments')::text) END)
$$;
-- +goose StatementEnd
UPDATE gb_agent_research_steps s SET messages = (
    SELECT jsonb_agg(CASE WHEN jsonb_typeof(m->'tool_calls') = 'array' THEN jsonb_set(m, '{tool_calls}', (
            SELECT coalesce(jsonb_agg(gb_stored_call_027(c) ORDER BY o), '[]'::jsonb)
            FROM jsonb_array_elements(m->'tool_calls') WITH ORDINALITY AS x(c, o)))
        ELSE m END ORDER BY i)
    FROM jsonb_array_elements(s.messages) WITH ORDINALITY AS y(m, i))
WHERE jsonb_typeof(s.messages) = 'array' AND jsonb_path_exists(s.messages, '$[*].tool_calls');
DROP FUNCTION gb_stored_call_027(jsonb);

-- +goose Down
-- Arguments that are a JSON object go back to being one; any other text
-- goes to invalid_arguments, with null arguments.
-- +goose StatementBegin
CREATE FUNCTION gb_object_call_027(c jsonb) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    a jsonb;
BEGIN
    IF jsonb_typeof(c->'arguments') <> 'string' THEN
        RETURN c;
    END IF;
    BEGIN
        a := (c->>'arguments')::jsonb;
    EXCEPTION WHEN others THEN
        a := NULL;
    END;
    IF jsonb_typeof(a) = 'object' THEN
        RETURN jsonb_build_object('id', c->'id', 'name', c->'name', 'arguments', a);
    END IF;
    RETURN jsonb_build_object('id', c->'id', 'name', c->'name', 'arguments', NULL, 'invalid_arguments', c->'arguments');
END $$;
-- +goose StatementEnd
UPDATE gb_agent_research_steps s SET messages = (
    SELECT jsonb_agg(CASE WHEN jsonb_typeof(m->'tool_calls') = 'array' THEN jsonb_set(m, '{tool_calls}', (
            SELECT coalesce(jsonb_agg(gb_object_call_027(c) ORDER BY o), '[]'::jsonb)
            FROM jsonb_array_elements(m->'tool_calls') WITH ORDINALITY AS x(c, o)))
        ELSE m END ORDER BY i)
    FROM jsonb_array_elements(s.messages) WITH ORDINALITY AS y(m, i))
WHERE jsonb_typeof(s.messages) = 'array' AND jsonb_path_exists(s.messages, '$[*].tool_calls');
DROP FUNCTION gb_object_call_027(jsonb);
