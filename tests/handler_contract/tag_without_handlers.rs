//! Routes for a service that lacks a tag's handlers (here: every tag's).

struct Handlers;

fn routes(cfg: &mut actix_web::web::ServiceConfig) {
    wpds::operations::configure::<Handlers>(cfg);
}

fn main() {
    let _ = routes;
}
