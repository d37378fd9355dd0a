//! `bench-bare-http`: ceiling (a) of the write path — HTTP and JSON only, no I/O — and,
//! with a database, ceiling (c): the leanest server doing the write the way wpds does.
//!
//! `bench-bare-http --bind 127.0.0.1:PORT [--workers N]` serves
//! `PUT /v1/workspaces/{workspaceId}/time-log/cells` with a bare actix-web handler: it
//! deserialises the body into the contract's generated `SetTimeLogCellRequest` and answers
//! 200 with the `TimeLogCellResult` the server would (hours canonical, version
//! `expectedVersion + 1`), without authentication, validation, logging or a database.
//! `GET /readyz` answers 200 so the bench script can wait for it like for the server.
//!
//! With `--database-url postgres://… --tokens FILE` (bench-data's tokens, line N user N)
//! the handler instead takes the caller from a map of those tokens and runs the
//! repository's own write (`time_log::set_cell`) through the storage crate
//! (`Database::write`: on PostgreSQL the writes waiting together go as one statement, on
//! the shared, pipelining connections, `--per-thread` per worker, 8 as the server's
//! default), answering its row, or 409 when the write met another version: wpds's HTTP
//! stack and database path with nothing of its own layers (no request id, edge middleware,
//! validation against the document, authentication lookups, problem mapping). On the same
//! machine as the database and wrk, it says how much of pgbench's rate any server that
//! speaks HTTP to wrk and writes through this storage crate can reach.

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use wpds_bench::{Args, WORKSPACE_ID, fail};
use wpds_contract::types::{SetTimeLogCellRequest, TimeLogCellResult, TimeLogEntry, TimeLogPhase};
use wpds_storage::repos::time_log::{CellChange, format_hours, parse_hours, set_cell};
use wpds_storage::{Budget, Database, DbConfig, StoreError};

/// The server's allocator (src/main.rs), so a ceiling is not held back by another's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Ceiling (c)'s database and callers.
struct Lean {
    db: Arc<Database>,
    users: HashMap<String, i64>,
}

async fn write(path: web::Path<String>, body: web::Bytes) -> HttpResponse {
    let _workspace = path.into_inner();
    let request: SetTimeLogCellRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return HttpResponse::BadRequest().body(e.to_string()),
    };
    let Some(hours) = parse_hours(&request.hours) else {
        return HttpResponse::BadRequest().body("hours");
    };
    let phase = request.phase.map_or("general", TimeLogPhase::as_str);
    let Ok(phase) = serde_json::from_value(serde_json::Value::String(phase.to_owned())) else {
        return HttpResponse::BadRequest().body("phase");
    };
    let entry = TimeLogEntry {
        id: "1".to_owned(),
        project_id: request.project_id,
        phase,
        date: request.date,
        hours: format_hours(hours),
        note: request.note.unwrap_or_default(),
        billable: request.billable.unwrap_or(true),
        version: request.expected_version + 1,
    };
    match serde_json::to_vec(&TimeLogCellResult { entry }) {
        Ok(body) => HttpResponse::Ok().content_type("application/json").body(body),
        Err(e) => HttpResponse::InternalServerError().body(e.to_string()),
    }
}

/// Ceiling (c): the caller from the token map, the repository's write through the storage
/// crate.
async fn lean_write(lean: web::Data<Lean>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let token = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(&user_id) = token.and_then(|token| lean.users.get(token)) else {
        return HttpResponse::Unauthorized().finish();
    };
    let request: SetTimeLogCellRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return HttpResponse::BadRequest().body(e.to_string()),
    };
    let write = CellChange::requested(WORKSPACE_ID, user_id, request);
    let budget = Budget::new(lean.db.timeout());
    match lean.db.write(&budget, set_cell(write)).await {
        Ok(entry) => match serde_json::to_vec(&TimeLogCellResult { entry }) {
            Ok(body) => HttpResponse::Ok().content_type("application/json").body(body),
            Err(e) => HttpResponse::InternalServerError().body(e.to_string()),
        },
        Err(StoreError::VersionConflict(_)) => HttpResponse::Conflict().finish(),
        Err(e) => HttpResponse::ServiceUnavailable().body(format!("{e:?}")),
    }
}

/// Ceiling (c)'s database (shared connections, `per_thread` per worker) and token map.
fn lean(url: String, tokens: &str, per_thread: usize) -> Lean {
    let config = DbConfig {
        url,
        pool_size: 1,
        timeout: Duration::from_millis(DbConfig::DEFAULT_TIMEOUT_MS),
        ..DbConfig::default()
    };
    let mut db = Database::connect(&config).unwrap_or_else(|e| fail(&format!("database: {e:?}")));
    db.share_statements(per_thread).unwrap_or_else(|e| fail(&format!("shared connections: {e}")));
    let text =
        std::fs::read_to_string(tokens).unwrap_or_else(|e| fail(&format!("cannot read {tokens}: {e}")));
    let users = text.lines().zip(1..).map(|(token, user)| (token.to_owned(), user)).collect();
    Lean { db: Arc::new(db), users }
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let bind = args.text("bind");
    let workers = args.number("workers", 0);
    let lean = args.optional("database-url").map(|url| {
        let per_thread = args.number("per-thread", 8).max(1) as usize;
        web::Data::new(lean(url, &args.text("tokens"), per_thread))
    });
    let mut server = HttpServer::new(move || {
        let app = App::new().route("/readyz", web::get().to(HttpResponse::Ok));
        match &lean {
            Some(lean) => app
                .app_data(lean.clone())
                .route("/v1/workspaces/{workspaceId}/time-log/cells", web::put().to(lean_write)),
            None => app.route("/v1/workspaces/{workspaceId}/time-log/cells", web::put().to(write)),
        }
    });
    if workers > 0 {
        server = server.workers(workers as usize);
    }
    server.bind(&bind).unwrap_or_else(|e| fail(&format!("cannot listen on {bind}: {e}"))).run().await
}
