//! `bench-walk`: finds a deep receipts cursor the honest way, by walking pages through the API.
//!
//! `bench-walk --base http://127.0.0.1:PORT --token T --pages P --limit L` requests
//! `GET /v1/workspaces/1/projects/1/sync-updates/commercial-receipts?limit=L` and follows
//! `nextCursor` until it holds the cursor that opens page `P` (so `P - 1` pages are read
//! over one keep-alive connection). Prints `{"cursor":…,"pagesRead":…,"seconds":…}`; the
//! cursor is signed by the server, so it is exactly what a client paging that deep holds.

use std::time::Instant;
use wpds_bench::{Args, PROJECT_ID, WORKSPACE_ID, fail};

fn main() {
    let args = Args::parse();
    let base = args.text("base");
    let token = args.text("token");
    let pages = args.number("pages", 10_000).max(2);
    let limit = args.number("limit", 100);
    let started = Instant::now();
    let agent = ureq::Agent::new_with_defaults();
    let listing = format!(
        "{base}/v1/workspaces/{WORKSPACE_ID}/projects/{PROJECT_ID}/sync-updates/commercial-receipts?limit={limit}"
    );
    let authorization = format!("Bearer {token}");
    let mut cursor: Option<String> = None;
    for page in 1..pages {
        let url = match &cursor {
            None => listing.clone(),
            Some(cursor) => format!("{listing}&cursor={cursor}"),
        };
        let body = agent
            .get(&url)
            .header("Authorization", &authorization)
            .call()
            .and_then(|mut response| response.body_mut().read_to_string())
            .unwrap_or_else(|e| fail(&format!("page {page}: {e}")));
        let page_json: serde_json::Value =
            serde_json::from_str(&body).unwrap_or_else(|e| fail(&format!("page {page}: {e}")));
        match page_json.get("nextCursor").and_then(|c| c.as_str()) {
            Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
            _ => fail(&format!("page {page} is the last; there is no page {pages} of {limit}")),
        }
    }
    let cursor = cursor.unwrap_or_else(|| fail("no cursor"));
    println!(
        r#"{{"cursor":"{cursor}","pagesRead":{},"limit":{limit},"seconds":{:.3}}}"#,
        pages - 1,
        started.elapsed().as_secs_f64()
    );
}
