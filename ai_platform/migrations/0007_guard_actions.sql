-- The gateway's guards (issue 18): every time a guard acts on a request or a reply, one
-- row. Scores are recorded, never the raw text or a key: `key_name` names the caller.
CREATE TABLE guard_actions (
    action_id     VARCHAR PRIMARY KEY,
    occurred_at   TIMESTAMPTZ NOT NULL,   -- when the request came in
    key_name      VARCHAR,                -- the caller's key, once keys are required
    model         VARCHAR NOT NULL,
    prompt_name   VARCHAR,
    route         VARCHAR NOT NULL,       -- prompt | openai
    guard         VARCHAR NOT NULL,       -- pii | injection
    action        VARCHAR NOT NULL,       -- block | mask | log
    reason        VARCHAR NOT NULL,
    scores        JSON                    -- e.g. {"injection": 0.93} or {"pii": ["cn_resident_id"]}
);
