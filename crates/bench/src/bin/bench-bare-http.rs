//! `bench-bare-http`: ceiling (a) of the write path — HTTP and JSON only, no I/O.
//!
//! `bench-bare-http --bind 127.0.0.1:PORT [--workers N]` serves
//! `PUT /v1/workspaces/{workspaceId}/time-log/cells` with a bare actix-web handler: it
//! deserialises the body into the contract's generated `SetTimeLogCellRequest` and answers
//! 200 with the `TimeLogCellResult` the server would (hours canonical, version
//! `expectedVersion + 1`), without authentication, validation, logging or a database.
//! `GET /readyz` answers 200 so the bench script can wait for it like for the server.

use actix_web::{App, HttpResponse, HttpServer, web};
use wpds_bench::{Args, fail};
use wpds_contract::types::{SetTimeLogCellRequest, TimeLogCellResult, TimeLogEntry, TimeLogPhase};
use wpds_storage::time_log::{format_hours, parse_hours};

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

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let bind = args.text("bind");
    let workers = args.number("workers", 0);
    let mut server = HttpServer::new(|| {
        App::new()
            .route("/v1/workspaces/{workspaceId}/time-log/cells", web::put().to(write))
            .route("/readyz", web::get().to(HttpResponse::Ok))
    });
    if workers > 0 {
        server = server.workers(workers as usize);
    }
    server.bind(&bind).unwrap_or_else(|e| fail(&format!("cannot listen on {bind}: {e}"))).run().await
}
