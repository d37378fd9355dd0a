-- Rate-limit counters shared by every server instance (PostgreSQL deployments): one row
-- per limited key (a user, or a client address) and fixed one-minute window. Rows of past
-- windows are deleted by the servers as windows pass.
CREATE TABLE rate_limit_windows (
    key TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    hits BIGINT NOT NULL,
    PRIMARY KEY (key, window_start)
);
