-- The archive's tables, partitioned by day on the time of what they hold
-- (partitions.go creates them ahead and drops them past retention), so
-- that retention drops partitions instead of deleting rows. A partitioned
-- table's keys must hold its partition column: each key is what the
-- engine gave the row plus its time, which the engine gave too, so a row
-- written again has the same key and is ignored (ON CONFLICT DO NOTHING).

-- +goose Up
CREATE TABLE chat_messages (
    channel     text        NOT NULL,
    id          bigint      NOT NULL,
    created_at  timestamptz NOT NULL,
    user_id     text        NOT NULL,
    user_name   text        NOT NULL,
    user_role   text        NOT NULL,
    body        text        NOT NULL,
    bot         boolean     NOT NULL DEFAULT false,
    deleted_at  timestamptz,
    PRIMARY KEY (channel, id, created_at)
) PARTITION BY RANGE (created_at);
-- A user's history in a channel, newest first.
CREATE INDEX chat_messages_user ON chat_messages (channel, user_id, id);
-- Replay by time.
CREATE INDEX chat_messages_time ON chat_messages (channel, created_at, id);
-- Search: the 'simple' configuration lower-cases and splits on
-- non-letters without stemming or stop words, so every language and
-- script is searchable alike.
CREATE INDEX chat_messages_search ON chat_messages USING gin (to_tsvector('simple', body));

-- Every other event of a channel's log: message_deleted (its tombstone
-- is applied to chat_messages too), user_timed_out, user_banned,
-- shield_mode. (msg_id, seq) is its place in the log.
CREATE TABLE chat_events (
    channel  text        NOT NULL,
    msg_id   bigint      NOT NULL,
    seq      bigint      NOT NULL,
    at       timestamptz NOT NULL,
    type     text        NOT NULL,
    data     jsonb       NOT NULL,
    PRIMARY KEY (channel, msg_id, seq, at)
) PARTITION BY RANGE (at);

-- The moderation log: (ms, n) is the entry's id "<ms>-<n>"; at is the
-- id's time (the partition key: the id is the engine's, so a row written
-- again falls in the same partition).
CREATE TABLE chat_modlog (
    channel    text        NOT NULL,
    ms         bigint      NOT NULL,
    n          bigint      NOT NULL,
    at         timestamptz NOT NULL,
    action     text        NOT NULL,
    actor_id   text        NOT NULL,
    target_id  text,
    data       jsonb       NOT NULL,
    PRIMARY KEY (channel, ms, n, at)
) PARTITION BY RANGE (at);
CREATE INDEX chat_modlog_target ON chat_modlog (channel, target_id, ms, n);

-- +goose Down
DROP TABLE chat_modlog;
DROP TABLE chat_events;
DROP TABLE chat_messages;
