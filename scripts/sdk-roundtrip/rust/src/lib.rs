//! The client progenitor generated (by `build.rs`) from the server's `/openapi-3.0.json`.
include!(concat!(env!("OUT_DIR"), "/codegen.rs"));
