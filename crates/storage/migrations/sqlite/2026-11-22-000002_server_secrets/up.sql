-- Secrets the server keeps for itself (one row per purpose), generated on first use so
-- that every server process sharing this database uses the same value.
CREATE TABLE server_secrets (
    name TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
