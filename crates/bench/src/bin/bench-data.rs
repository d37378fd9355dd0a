//! `bench-data`: generates the bench data set, or resets its cells between runs.
//!
//! `bench-data --database-url URL --users N --dates D --receipts R --tokens-out FILE`
//! migrates an empty database through the storage crate, then loads with plain SQL
//! (a recursive CTE on SQLite, `generate_series` on PostgreSQL): one workspace and one
//! project, users `1..=N` (all members), `N × D` time-log cells at version
//! [`CELL_START_VERSION`] (so every bench write is an update of an existing cell), and `R`
//! commercial receipts of the project (two per millisecond timestamp, so keyset pages meet
//! ties). Access tokens come from the storage crate's own `auth::issue` (one login per
//! user), one per line in `FILE`, user 1 first.
//!
//! `bench-data --database-url URL --reset-cells 1` puts every cell back at version
//! [`CELL_START_VERSION`]. Prints one JSON line with what it did and how long it took.

use diesel::connection::SimpleConnection;
use std::time::{Duration, Instant};
use wpds_bench::{Args, CELL_START_VERSION, FIRST_DATE, PROJECT_ID, WORKSPACE_ID, fail};
use wpds_storage::repos::auth::{self, TokenLifetimes};
use wpds_storage::{Database, DbConfig, DbConn};

/// The SQL of one engine: `{users}`, `{dates}`, `{receipts}`, … are filled in.
struct Dialect {
    numbers: &'static str,
    cell_date: &'static str,
    false_: &'static str,
    true_: &'static str,
    /// Run after the load. PostgreSQL's autovacuum would analyse the new rows soon anyway;
    /// SQLite gets nothing, as the server never analyses (and with statistics, the bundled
    /// SQLite's STAT4 re-prepares statements whenever a bound value could change the plan).
    after_load: &'static str,
}

const SQLITE: Dialect = Dialect {
    numbers: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count})",
    cell_date: "date('{first}', '+' || (d.i - 1) || ' days')",
    false_: "0",
    true_: "1",
    after_load: "",
};

const POSTGRES: Dialect = Dialect {
    numbers: "WITH n(i) AS (SELECT generate_series(1, {count})::bigint)",
    cell_date: "to_char(date '{first}' + (d.i - 1)::int, 'YYYY-MM-DD')",
    false_: "false",
    true_: "true",
    after_load: "ANALYZE",
};

fn main() {
    let args = Args::parse();
    let url = args.text("database-url");
    let started = Instant::now();
    let config = DbConfig {
        url: url.clone(),
        pool_size: 1,
        // The load is one statement of a million rows: minutes on a slow disk, which the
        // server's 30 s statement timeout would cancel.
        timeout: Duration::from_secs(900),
        ..DbConfig::default()
    };
    let db = Database::open(&config).unwrap_or_else(|e| fail(&format!("cannot open {url}: {e}")));
    let mut pooled = db.conn().unwrap_or_else(|e| fail(&e.to_string()));
    let conn = &mut pooled;
    if args.number("reset-cells", 0) != 0 {
        run(conn, &format!("UPDATE time_log_entries SET version = {CELL_START_VERSION}"));
        println!(r#"{{"reset":true,"seconds":{:.3}}}"#, started.elapsed().as_secs_f64());
        return;
    }
    let users = args.number("users", 16);
    let dates = args.number("dates", 256);
    let receipts = args.number("receipts", 1_000_000);
    let tokens_out = args.text("tokens-out");
    let dialect = match conn {
        DbConn::Sqlite(_) => &SQLITE,
        DbConn::Postgres(_) => &POSTGRES,
    };
    let numbers = |count: i64| dialect.numbers.replace("{count}", &count.to_string());
    let now = 1_763_700_000_000_i64;
    let statements = [
        "BEGIN".to_owned(),
        format!("INSERT INTO workspaces (id, name) VALUES ({WORKSPACE_ID}, 'Bench workspace')"),
        format!(
            "INSERT INTO projects (id, workspace_id, name) VALUES ({PROJECT_ID}, {WORKSPACE_ID}, 'Bench project')"
        ),
        format!(
            "{} INSERT INTO users (id, email, display_name, is_platform_admin) \
             SELECT i, 'bench' || i || '@example.com', 'Bench user ' || i, {} FROM n",
            numbers(users),
            dialect.false_
        ),
        format!(
            "{} INSERT INTO memberships (workspace_id, user_id) SELECT {WORKSPACE_ID}, i FROM n",
            numbers(users)
        ),
        format!(
            "{}, d(i) AS (SELECT i FROM n WHERE i <= {dates}) \
             INSERT INTO time_log_entries (workspace_id, user_id, project_id, entry_date, phase, hours_centi, note, billable, version, updated_at) \
             SELECT {WORKSPACE_ID}, u.i, {PROJECT_ID}, {}, 'general', 100, '', {}, {CELL_START_VERSION}, {now} \
             FROM n AS u CROSS JOIN d WHERE u.i <= {users}",
            numbers(users.max(dates)),
            dialect.cell_date.replace("{first}", FIRST_DATE),
            dialect.true_
        ),
        format!(
            "{} INSERT INTO commercial_receipts (id, workspace_id, project_id, project_item_id, project_item_name, \
             family_id, family_name, primary_image_url, actor_name, outcome, fields, release, created_at) \
             SELECT i, {WORKSPACE_ID}, {PROJECT_ID}, 4000 + i % 500, 'Item ' || (i % 500), 100 + i % 50, \
             'Family ' || (i % 50), CASE WHEN i % 3 = 0 THEN 'https://img.example.com/' || (i % 50) || '.png' ELSE '' END, \
             'Bench actor', CASE WHEN i % 5 = 0 THEN 'skipped_already_in_sync' ELSE 'applied' END, \
             '[{{\"slug\":\"finish\",\"label\":\"Finish\",\"from\":{{\"text\":\"Oak\"}},\"to\":{{\"text\":\"Walnut\"}},\"fromDisplay\":\"Oak\",\"toDisplay\":\"Walnut\"}}]', \
             '{{\"id\":\"77\",\"number\":4,\"label\":\"Release 4\",\"collectionId\":\"12\",\"collectionName\":\"Seating 2026\"}}', \
             {now} + (i / 2) * 1000 FROM n",
            numbers(receipts)
        ),
        "COMMIT".to_owned(),
        dialect.after_load.to_owned(),
    ];
    for statement in &statements {
        run(conn, statement);
    }
    let loaded = started.elapsed();
    // The pool's one connection goes back for the tokens' writes.
    drop(pooled);
    let lifetimes =
        TokenLifetimes { access: Duration::from_secs(86_400), refresh: Duration::from_secs(86_400) };
    let mut tokens = String::new();
    for user in 1..=users {
        let pair = db
            .write_now(auth::issue(user, lifetimes))
            .unwrap_or_else(|e| fail(&format!("token of user {user}: {e}")));
        tokens.push_str(&pair.access_token);
        tokens.push('\n');
    }
    std::fs::write(&tokens_out, tokens).unwrap_or_else(|e| fail(&format!("cannot write {tokens_out}: {e}")));
    println!(
        r#"{{"users":{users},"cells":{},"receipts":{receipts},"loadSeconds":{:.3},"seconds":{:.3}}}"#,
        users * dates,
        loaded.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

/// Runs one statement of either engine; exits naming it on failure.
fn run(conn: &mut DbConn, sql: &str) {
    let outcome = match conn {
        DbConn::Sqlite(c) => (**c).batch_execute(sql),
        DbConn::Postgres(c) => (**c).batch_execute(sql),
    };
    if let Err(e) = outcome {
        fail(&format!("{e}\n  in: {sql}"));
    }
}
