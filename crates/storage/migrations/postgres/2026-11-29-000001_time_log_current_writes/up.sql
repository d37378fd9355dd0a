-- The hot write's common case for the writes of one batch (crates/storage/src/repos/time_log.rs,
-- CurrentWrites): each current write of an existing cell at its expected version, applied, its
-- row returned with its place in the arrays (`slot`, from 1); a write it does not apply (a
-- conflict, a first write) returns no row.
--
-- Why a function: behind a transaction pooler that keeps no prepared statement (PgBouncer 1.18,
-- WPDS_PG_POOLER=transaction) every statement is parsed and planned where it runs, and planning
-- the UPDATE over arrays was a third of PostgreSQL's work per batch. PL/pgSQL keeps the plan of
-- the statement inside for as long as its server connection lives, whichever client the pooler
-- lends it to, so a batch's call is parsed and planned as a call, once per batch, and its UPDATE
-- is planned once per server connection. Its plan is generic whatever the role or the session
-- says (`SET plan_cache_mode`): one plan serves every batch's length (a nested loop over the
-- arrays, an index lookup per write), while planned for each length it was planned again for
-- every batch (crates/storage/src/engine/batch.rs, GENERIC_PLANS).
CREATE FUNCTION time_log_current_writes(
    now_ms BIGINT,
    workspaces BIGINT[],
    users BIGINT[],
    projects BIGINT[],
    dates TEXT[],
    phases TEXT[],
    expected BIGINT[],
    hours BIGINT[],
    notes TEXT[],
    billables BOOLEAN[]
) RETURNS TABLE (
    slot BIGINT,
    id BIGINT,
    project_id BIGINT,
    entry_date TEXT,
    phase TEXT,
    hours_centi BIGINT,
    note TEXT,
    billable BOOLEAN,
    version BIGINT
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    UPDATE time_log_entries AS t
    SET hours_centi = w.hours_centi, note = w.note, billable = w.billable, version = t.version + 1,
        updated_at = now_ms
    FROM unnest(workspaces, users, projects, dates, phases, expected, hours, notes, billables)
        WITH ORDINALITY AS w (workspace_id, user_id, project_id, entry_date, phase, expected_version,
                              hours_centi, note, billable, slot)
    WHERE t.user_id = w.user_id AND t.project_id = w.project_id AND t.entry_date = w.entry_date
        AND t.phase = w.phase AND t.workspace_id = w.workspace_id AND t.version = w.expected_version
    RETURNING w.slot, t.id, t.project_id, t.entry_date, t.phase, t.hours_centi, t.note, t.billable,
        t.version;
END
$$;
