//! `bench-cursor`: the receipts cursor that opens a page deep in the listing, obtained honestly.
//!
//! `bench-cursor --base http://127.0.0.1:PORT --token T --database-url URL --limit L
//! --pages P [--check-pages C]`:
//! 1. walks the first `C` pages (20 by default) of
//!    `GET /v1/workspaces/1/projects/1/sync-updates/commercial-receipts?limit=L` through the
//!    API;
//! 2. signs the position of row `C × L` itself, with the format and key the storage crate
//!    documents (`crates/storage/src/repos/receipts.rs`: `base64url(payload) "." base64url(MAC)`,
//!    the MAC keyed by the secret in `server_secrets`), and fails unless the result is
//!    byte for byte the `nextCursor` the server answered after page `C`;
//! 3. signs in the same way the position after `P` pages (row `P × L`, read with SQL
//!    `ORDER BY created_at DESC, id DESC OFFSET P × L - 1`), requests that page through
//!    the API and fails unless it answers 200 starting at row `P × L + 1`.
//!
//! Walking all `P` pages through the API would give the same cursor, but each page costs
//! time proportional to its depth (see `docs/performance.md`), so `P` = 10 000 would take
//! far longer than the whole benchmark. Prints
//! `{"cursor":…,"depthRows":…,"checkedPages":…,"firstId":…,"seconds":…}`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use diesel::prelude::*;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::time::{Duration, Instant};
use wpds_bench::{Args, PROJECT_ID, WORKSPACE_ID, fail};
use wpds_storage::engine::{CURSOR_SIGNING, secret};
use wpds_storage::schema::commercial_receipts as receipts;
use wpds_storage::{Database, DbConfig, DbConn};

/// The server's page at `url`, as JSON.
fn get(agent: &ureq::Agent, url: &str, authorization: &str) -> serde_json::Value {
    let body = agent
        .get(url)
        .header("Authorization", authorization)
        .call()
        .and_then(|mut response| response.body_mut().read_to_string())
        .unwrap_or_else(|e| fail(&format!("GET {url}: {e}")));
    serde_json::from_str(&body).unwrap_or_else(|e| fail(&format!("GET {url}: {e}")))
}

/// The cursor continuing after the row at (`created_at`, `id`), signed as the storage
/// crate documents it for the unfiltered listing of project 1 in workspace 1.
fn sign(secret: &[u8], created_at: i64, id: i64) -> String {
    let payload = URL_SAFE_NO_PAD.encode(format!(r#"{{"v":1,"createdAt":{created_at},"id":{id}}}"#));
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).unwrap_or_else(|e| fail(&e.to_string()));
    mac.update(format!("wpds/commercial-receipts/v1\n{WORKSPACE_ID}\n{PROJECT_ID}\n\n").as_bytes());
    mac.update(payload.as_bytes());
    format!("{payload}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
}

/// (`created_at`, `id`) of the `row`-th receipt (1-based) newest first.
fn position(conn: &mut DbConn, row: i64) -> (i64, i64) {
    let query = receipts::table
        .filter(receipts::project_id.eq(PROJECT_ID))
        .order((receipts::created_at.desc(), receipts::id.desc()))
        .select((receipts::created_at, receipts::id))
        .offset(row - 1);
    let found = match conn {
        DbConn::Sqlite(c) => query.first(&mut **c),
        DbConn::Postgres(c) => query.first(&mut **c),
    };
    found.unwrap_or_else(|e| fail(&format!("row {row}: {e}")))
}

fn main() {
    let args = Args::parse();
    let base = args.text("base");
    let authorization = format!("Bearer {}", args.text("token"));
    let url = args.text("database-url");
    let limit = args.number("limit", 25);
    let pages = args.number("pages", 10_000);
    let check_pages = args.number("check-pages", 20).max(1);
    let started = Instant::now();
    let agent = ureq::Agent::new_with_defaults();
    let listing = format!(
        "{base}/v1/workspaces/{WORKSPACE_ID}/projects/{PROJECT_ID}/sync-updates/commercial-receipts?limit={limit}"
    );
    let mut walked = String::new();
    for page in 1..=check_pages {
        let url = if page == 1 { listing.clone() } else { format!("{listing}&cursor={walked}") };
        let json = get(&agent, &url, &authorization);
        walked = json["nextCursor"].as_str().unwrap_or_default().to_owned();
        if walked.is_empty() {
            fail(&format!("page {page} is the last one"));
        }
    }
    let db = Database::connect(&DbConfig {
        url: url.clone(),
        pool_size: 1,
        timeout: Duration::from_secs(10),
        ..DbConfig::default()
    })
    .unwrap_or_else(|e| fail(&e.to_string()));
    let conn = &mut db.conn().unwrap_or_else(|e| fail(&e.to_string()));
    let secret = secret(conn, CURSOR_SIGNING).unwrap_or_else(|e| fail(&format!("the cursor secret: {e}")));
    let (created_at, id) = position(conn, check_pages * limit);
    let signed = sign(&secret, created_at, id);
    if signed != walked {
        fail(&format!("after {check_pages} pages the server answered {walked}, signing here gives {signed}"));
    }
    let depth = pages * limit;
    let (created_at, id) = position(conn, depth);
    let cursor = sign(&secret, created_at, id);
    let (_, expected_first) = position(conn, depth + 1);
    let page = get(&agent, &format!("{listing}&cursor={cursor}"), &authorization);
    let first = page["items"][0]["id"].as_str().unwrap_or_default().to_owned();
    if first != expected_first.to_string() {
        fail(&format!("the page after row {depth} starts at {first}, not at {expected_first}"));
    }
    println!(
        r#"{{"cursor":"{cursor}","depthRows":{depth},"checkedPages":{check_pages},"firstId":"{first}","seconds":{:.3}}}"#,
        started.elapsed().as_secs_f64()
    );
}
