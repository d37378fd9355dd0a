//! Round trip through the client progenitor generated (run by scripts/check-sdks).
//! Environment: WPDS_BASE_URL, WPDS_TOKEN, SDK_CELL_DATE (the time-log cell this client owns).

use futures::TryStreamExt;
use std::collections::HashSet;
use std::num::{NonZeroU32, NonZeroU64};
use wpds_sdk_roundtrip::{Client, Error, types};

const NAME: &str = "rust";

fn check(ok: bool, what: impl FnOnce() -> String) {
    if !ok {
        eprintln!("{NAME}: FAILED: {}", what());
        std::process::exit(1);
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        eprintln!("{NAME}: FAILED: {name} is not set");
        std::process::exit(1)
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = roundtrip().await {
        eprintln!("{NAME}: FAILED: {e}");
        std::process::exit(1);
    }
}

async fn roundtrip() -> Result<(), Box<dyn std::error::Error>> {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {}", env("WPDS_TOKEN")).parse()?);
    let http = reqwest::Client::builder().default_headers(headers).build()?;
    let client = Client::new_with_client(&env("WPDS_BASE_URL"), http);
    let day: chrono::NaiveDate = env("SDK_CELL_DATE").parse().map_err(|e| format!("SDK_CELL_DATE: {e}"))?;

    // (a) The first write of a cell: expectedVersion 1 creates version 2.
    let cell = types::SetTimeLogCellRequest {
        project_id: "7".into(),
        date: day,
        hours: "7.5".parse()?,
        expected_version: NonZeroU64::MIN,
        billable: None,
        note: None,
        phase: None,
    };
    let entry = client.set_own_time_log_cell("1", &cell).await?.into_inner().entry;
    check(entry.version == 2, || format!("entry.version {}, expected 2", entry.version));
    check(entry.hours == "7.50", || format!("entry.hours {:?}, expected \"7.50\"", entry.hours));
    check(entry.date == day && entry.project_id == "7", || {
        format!("entry is for {} {}", entry.project_id, entry.date)
    });

    // (b) Receipts of project 7, ten at a time, following nextCursor to the end.
    let limit = NonZeroU32::new(10);
    let mut seen = HashSet::new();
    let mut pages = 0;
    let mut cursor: Option<types::ListCommercialReceiptsCursor> = None;
    loop {
        let page =
            client.list_commercial_receipts("1", "7", cursor.as_ref(), limit, None).await?.into_inner();
        pages += 1;
        let n = page.items.len();
        check((1..=10).contains(&n) || !page.has_more, || format!("page {pages} holds {n} receipts"));
        for pair in page.items.windows(2) {
            let key = |r: &types::CommercialReceipt| (r.created_at, r.id.parse::<u64>().unwrap_or(0));
            check(key(&pair[0]) > key(&pair[1]), || {
                format!("page {pages} is not newest first at {}, {}", pair[0].id, pair[1].id)
            });
        }
        for r in &page.items {
            check(seen.insert(r.id.clone()), || format!("page {pages} repeats {}", r.id));
        }
        let cursor_given = !page.next_cursor.is_empty();
        check(page.has_more == cursor_given, || {
            format!("page {pages}: hasMore {} with nextCursor {:?}", page.has_more, page.next_cursor)
        });
        if !page.has_more {
            break;
        }
        check(pages < 50, || "more than 50 pages".into());
        cursor = Some(page.next_cursor.parse()?);
    }
    check(pages >= 2, || format!("only {pages} page(s); the demo project has more than 10 receipts"));

    // (c) A stale expectedVersion: 409 version_conflict. progenitor types only
    // `application/json` bodies; a documented `application/problem+json` error comes back as
    // `Error::ErrorResponse` with the body as a byte stream, read here into the client's
    // generated `types::Problem`.
    let problem: types::Problem = match client.set_own_time_log_cell("1", &cell).await {
        Ok(v) => {
            check(false, || format!("the stale write succeeded with {:?}", v.status()));
            unreachable!()
        }
        Err(Error::ErrorResponse(rv)) => {
            check(rv.status().as_u16() == 409, || format!("the stale write answered {}", rv.status()));
            let body: Vec<u8> = rv.into_inner_stream().map_ok(|chunk| chunk.to_vec()).try_concat().await?;
            serde_json::from_slice(&body).map_err(|e| {
                format!("the 409 body is not a Problem ({e}): {}", String::from_utf8_lossy(&body))
            })?
        }
        Err(e) => return Err(format!("the stale write failed: {e}").into()),
    };
    check(*problem.code == "version_conflict", || format!("problem.code {:?}", *problem.code));
    check(problem.current_version == Some(2), || {
        format!("problem.current_version {:?}", problem.current_version)
    });
    check(problem.status == 409, || format!("problem.status {}", problem.status));
    let current_version = problem
        .current
        .as_ref()
        .and_then(|c| c.get("entry"))
        .and_then(|e| e.get("version"))
        .and_then(|v| v.as_i64());
    check(current_version == Some(2), || format!("problem.current {:?}", problem.current));

    println!(
        "{NAME}: ok (cell {day} v2 7.50; {} receipts in {pages} pages; 409 {} currentVersion 2)",
        seen.len(),
        *problem.code
    );
    Ok(())
}
