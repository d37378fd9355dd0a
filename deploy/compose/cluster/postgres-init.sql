-- Run once by the postgres image on an empty data directory, in the database wpds: the
-- role the server logs in as, owning its database, with the timeouts the server requires
-- behind a pooler that keeps prepared statements (docs/operations.md, "Running several
-- instances": statement_timeout no looser than WPDS_DB_TIMEOUT_MS, 1500 ms by default).
-- The password is the quickstart's (cluster.compose.yaml says which files hold it).
CREATE ROLE wpds LOGIN PASSWORD 'wpds-quickstart';
ALTER DATABASE wpds OWNER TO wpds;
ALTER ROLE wpds IN DATABASE wpds SET statement_timeout = '1500ms';
ALTER ROLE wpds IN DATABASE wpds SET lock_timeout = '50ms';
ALTER ROLE wpds IN DATABASE wpds SET plan_cache_mode = 'force_generic_plan';
