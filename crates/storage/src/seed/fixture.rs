//! The fixture file as serde reads it, after the schema has accepted it.
//!
//! The types are generated at build time from `openapi/fixture.schema.json` by the
//! project's own type generator (`wpds_codegen::types::generate_json_schema`, run by
//! `build.rs`): the root is [`Fixture`], each `$defs` entry the item of its name in
//! PascalCase (`documentScope` → [`DocumentScope`]), inline objects and enums are named
//! after their parent and property (`AssistantImport` + `target` → `AssistantImportTarget`).
//! Field names are the file's (camelCase, renamed); ids and timestamps stay strings here
//! and are parsed when the load plan is built, so a bad value is reported with its record.

// Generated for every construct of the schema: the loader does not use every helper
// (`ALL`, `Display`, …) of every type.
#![expect(dead_code, reason = "generated for every construct of the schema; the loader uses part of it")]

include!(concat!(env!("OUT_DIR"), "/fixture.rs"));
