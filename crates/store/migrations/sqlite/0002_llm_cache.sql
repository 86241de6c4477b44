-- Replies of deterministic (temperature 0) LLM calls, so a repeated call costs
-- nothing and a re-run replays the same answer. `key` is the SHA-256 of the
-- canonical JSON of (base URL, model, messages, parameters); `request_json` is
-- that JSON, kept so a row can be read and checked by hand. The API key is never
-- part of either: the key depends only on what is sent as the body.
CREATE TABLE llm_cache (
    key           TEXT    PRIMARY KEY,
    base_url      TEXT    NOT NULL,
    model         TEXT    NOT NULL,
    request_json  TEXT    NOT NULL,
    response_json TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    hits          INTEGER NOT NULL DEFAULT 0
);
