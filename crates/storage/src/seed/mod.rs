//! Loading fixture files (`wpds seed FILE.json`).
//!
//! The records the operations act on (documents, catalog families, imports, companies, …)
//! are created elsewhere in the platform and loaded here from a fixture file whose format
//! is published as a JSON Schema (`FIXTURE_SCHEMA`, `openapi/fixture.schema.json`).
//!
//! A load:
//! 1. parses the file and validates it against the schema, reporting every violation with
//!    the record and the field (`documents[3] (id "12"): /documents/3/scope: …`);
//! 2. converts it into rows: ids parsed with [`crate::ids::parse`], timestamps with
//!    `crate::clock::parse_millis`, lists and objects stored as JSON text, each
//!    assistant import's issue counts computed with `crate::repos::takeoff::issue_counts`;
//! 3. in ONE write transaction, checks the references the file makes against the file and
//!    the database, then inserts every row in dependency order with `ON CONFLICT DO
//!    NOTHING`, so loading a file twice changes nothing and a record changed through the
//!    API is never overwritten. Any failure rolls everything back.
//! 4. On PostgreSQL, moves every identity sequence past the ids the file brought, so rows
//!    the service creates later get fresh ids.

mod fixture;
mod plan;
mod write;

use crate::clock::now_millis;
use crate::engine::Database;
use crate::error::StoreError;
use jsonschema::Validator;
use serde_json::Value;
use std::fmt;
use std::sync::OnceLock;

/// The JSON Schema (draft 2020-12) of fixture files, as published in
/// `openapi/fixture.schema.json`.
#[cfg_attr(feature = "test-support", visibility::make(pub))]
pub(crate) const FIXTURE_SCHEMA: &str = include_str!("../../../../openapi/fixture.schema.json");

/// The kinds of records a load counts, in the order they are inserted.
const KINDS: [&str; 21] = [
    "users",
    "workspaces",
    "memberships",
    "projects",
    "projectAreas",
    "documentTypes",
    "catalogFamilies",
    "projectItems",
    "documents",
    "assistantImports",
    "globalCompanies",
    "categories",
    "productTypes",
    "itemColumns",
    "productTypeColumns",
    "contactCompanies",
    "contactPersons",
    "companyLinks",
    "commercialReceipts",
    "creditAllowances",
    "timeLogEntries",
];

/// How many records of one kind a load inserted, and how many were there already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindCount {
    /// The kind, named like the file's list (`documents`) or, for nested records, like
    /// the table (`projectAreas`, `memberships`, `productTypes`, `contactPersons`).
    pub kind: &'static str,
    /// Records the load inserted.
    pub inserted: u64,
    /// Records of the file whose id (or key) already existed, left as they were.
    pub present: u64,
}

/// What a load did, per kind of record, in insertion order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedReport {
    /// One entry per kind (every kind, also those the file does not use).
    pub kinds: Vec<KindCount>,
}

impl SeedReport {
    fn new() -> Self {
        SeedReport { kinds: KINDS.iter().map(|&kind| KindCount { kind, inserted: 0, present: 0 }).collect() }
    }

    /// Counts one insert attempt that changed `rows` rows (0: the record existed).
    fn count(&mut self, kind: &'static str, rows: usize) {
        if let Some(entry) = self.kinds.iter_mut().find(|entry| entry.kind == kind) {
            if rows == 0 {
                entry.present += 1;
            } else {
                entry.inserted += rows as u64;
            }
        }
    }

    /// The counts of one kind (`"documents"`), if it is a kind the loader knows.
    pub fn get(&self, kind: &str) -> Option<KindCount> {
        self.kinds.iter().find(|entry| entry.kind == kind).copied()
    }

    /// Records inserted, over all kinds.
    pub fn inserted(&self) -> u64 {
        self.kinds.iter().map(|entry| entry.inserted).sum()
    }

    /// Records that were there already, over all kinds.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn present(&self) -> u64 {
        self.kinds.iter().map(|entry| entry.present).sum()
    }
}

impl fmt::Display for SeedReport {
    /// One line per kind the file used, then the totals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for entry in self.kinds.iter().filter(|entry| entry.inserted + entry.present > 0) {
            writeln!(f, "{}: {} inserted, {} already present", entry.kind, entry.inserted, entry.present)?;
        }
        write!(f, "total: {} inserted, {} already present", self.inserted(), self.present())
    }
}

/// One thing wrong with a fixture file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedProblem {
    /// The record: `documents[3] (id "12")`, `creditAllowances[0]`, or `file` for the
    /// top level.
    pub record: String,
    /// JSON pointer of the offending value in the file (`/documents/3/scope`); empty for
    /// the whole file.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SeedProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "{}: {}", self.record, self.message)
        } else {
            write!(f, "{}: {}: {}", self.record, self.pointer, self.message)
        }
    }
}

/// Why a fixture file was not loaded. In every case nothing was written.
#[derive(Debug)]
pub enum SeedError {
    /// The file is not JSON.
    Json(String),
    /// The file breaks the schema, holds a value the schema cannot rule out (an id beyond
    /// 64 bits, more than 24 hours, a key used twice), or names a record that exists
    /// neither in the file nor in the database. Lists every problem found at that stage.
    Invalid(Vec<SeedProblem>),
    /// The database refused one record (a constraint failed).
    Record {
        /// The record: `documents[3] (id "12")`.
        record: String,
        /// The database's message (`FOREIGN KEY constraint failed`).
        message: String,
    },
    /// The database could not be used (unreachable, busy, or an unexpected failure).
    Store(Box<StoreError>),
}

impl SeedError {
    /// A refused insert of `record`; a lost or busy database stays a [`StoreError`].
    fn record(record: &str, error: diesel::result::Error) -> Self {
        match StoreError::from(error) {
            StoreError::Internal(message) => SeedError::Record { record: record.to_owned(), message },
            other => SeedError::Store(Box::new(other)),
        }
    }

    /// The problems of an [`SeedError::Invalid`] file (empty for other errors).
    #[cfg(feature = "test-support")]
    pub fn problems(&self) -> &[SeedProblem] {
        match self {
            SeedError::Invalid(problems) => problems,
            _ => &[],
        }
    }
}

impl fmt::Display for SeedError {
    /// One line per problem.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeedError::Json(why) => write!(f, "not a JSON file: {why}"),
            SeedError::Invalid(problems) => {
                for (i, problem) in problems.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{problem}")?;
                }
                Ok(())
            }
            SeedError::Record { record, message } => write!(f, "{record}: {message}"),
            SeedError::Store(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for SeedError {}

impl From<diesel::result::Error> for SeedError {
    fn from(error: diesel::result::Error) -> Self {
        SeedError::Store(Box::new(StoreError::from(error)))
    }
}

impl From<StoreError> for SeedError {
    fn from(error: StoreError) -> Self {
        SeedError::Store(Box::new(error))
    }
}

/// The compiled schema, built once.
fn validator() -> Result<&'static Validator, SeedError> {
    static VALIDATOR: OnceLock<Result<Validator, String>> = OnceLock::new();
    VALIDATOR
        .get_or_init(|| {
            let schema: Value = serde_json::from_str(FIXTURE_SCHEMA).map_err(|e| e.to_string())?;
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true)
                .build(&schema)
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|why| {
            SeedError::from(StoreError::Internal(format!("the fixture schema does not compile: {why}")))
        })
}

/// The record a JSON pointer into the file lies in: `documents[3] (id "12")` for
/// `/documents/3/scope`, the list's name for `/documents`, `file` for the top level.
fn record_at(file: &Value, pointer: &str) -> String {
    let mut segments = pointer.split('/').skip(1).map(|s| s.replace("~1", "/").replace("~0", "~"));
    let Some(list) = segments.next() else {
        return "file".to_owned();
    };
    let Some(index) = segments.next().and_then(|s| s.parse::<usize>().ok()) else {
        return list;
    };
    let id = file.get(&list).and_then(|records| records.get(index)).and_then(|record| record.get("id"));
    plan::record_label(&list, index, id.and_then(Value::as_str))
}

/// Orders pointers by list name, then numerically by index (`/documents/2` before
/// `/documents/10`).
fn pointer_key(pointer: &str) -> Vec<(u64, String)> {
    pointer
        .split('/')
        .skip(1)
        .map(|segment| (segment.parse::<u64>().unwrap_or(u64::MAX), segment.to_owned()))
        .collect()
}

/// Parses and schema-checks a file, then converts it into the rows to load.
fn prepare(fixture: &str) -> Result<plan::Plan, SeedError> {
    let file: Value = serde_json::from_str(fixture).map_err(|e| SeedError::Json(e.to_string()))?;
    let mut problems: Vec<SeedProblem> = validator()?
        .iter_errors(&file)
        .map(|error| {
            let pointer = error.instance_path().as_str().to_owned();
            SeedProblem { record: record_at(&file, &pointer), pointer, message: error.to_string() }
        })
        .collect();
    if !problems.is_empty() {
        problems.sort_by_cached_key(|problem| pointer_key(&problem.pointer));
        return Err(SeedError::Invalid(problems));
    }
    let parsed: fixture::Fixture = serde_json::from_value(file).map_err(|e| {
        SeedError::Invalid(vec![SeedProblem {
            record: "file".to_owned(),
            pointer: String::new(),
            message: e.to_string(),
        }])
    })?;
    plan::Plan::build(parsed, now_millis()).map_err(SeedError::Invalid)
}

/// Checks a fixture file without a database: JSON, the schema, and the values the schema
/// cannot rule out (ids beyond 64 bits, more than 24 hours, keys used twice). References
/// to records outside the file are not checked.
pub fn validate(fixture: &str) -> Result<(), SeedError> {
    prepare(fixture).map(|_| ())
}

/// Loads a fixture file (its text) into `db` in one transaction, on a pooled connection of
/// this thread: everything or, on any error, nothing. Records that already exist are left
/// as they are (see [`SeedReport`]).
pub fn load(db: &Database, fixture: &str) -> Result<SeedReport, SeedError> {
    let mut plan = prepare(fixture)?;
    write::run(&mut db.conn()?, &mut plan, write::Mode::Add)
}

/// Replaces every record in the database with the file's (its text), in one transaction:
/// logins, tokens, the audit log and what the operations wrote go too; the server's
/// secrets and the migrations stay. Refused ([`SeedError::Invalid`], nothing changed) when
/// the database holds a workspace or a user the file does not have, so it never erases
/// data that did not come from this file (`serve --demo --reset`).
pub fn reload(db: &Database, fixture: &str) -> Result<SeedReport, SeedError> {
    let mut plan = prepare(fixture)?;
    write::run(&mut db.conn()?, &mut plan, write::Mode::Replace)
}
