//! The conformance kit published with the contract (`conformance/`, issue 46): client
//! teams take it where they take the document. `/conformance/index.json` lists the kit's
//! files, relative to it, and each is served under `/conformance/` with the documents'
//! caching headers. The files are embedded by the build (`build.rs`), so the kit served is
//! always the one this server was built with; any other path is a 404 problem.

use crate::http::endpoint;
use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use actix_web::{HttpRequest, HttpResponse, web};

include!(concat!(env!("OUT_DIR"), "/conformance_kit.rs"));

/// Registers `/conformance/{file}`, answering `GET` and `HEAD` (see [`endpoint`]).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(endpoint::get("/conformance/{file:.*}", kit_file));
}

/// The kit's file `file`, or 404.
async fn kit_file(req: HttpRequest, file: web::Path<String>) -> HttpResponse {
    match KIT.binary_search_by(|(name, _)| (*name).cmp(file.as_str())) {
        Ok(found) => HttpResponse::Ok()
            .insert_header((CONTENT_TYPE, media_type(&file)))
            .insert_header((CACHE_CONTROL, "no-cache"))
            .body(KIT[found].1),
        Err(_) => endpoint::no_route(req).await,
    }
}

/// The media type of a kit's file, by its extension.
fn media_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, extension)| extension) {
        Some("json") => "application/json",
        Some("yaml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("md") => "text/markdown; charset=utf-8",
        Some("py") => "text/x-python; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kit_is_sorted_and_holds_its_index() {
        assert!(KIT.windows(2).all(|pair| pair[0].0 < pair[1].0), "sorted, for the binary search");
        assert!(KIT.iter().any(|(name, _)| *name == "index.json"));
        assert!(KIT.iter().any(|(name, _)| *name == "schemathesis.toml"));
    }
}
