//! `openapi-compat`: the breaking-change gate between a released contract document and the
//! current one (see `wpds_compat`), used by `scripts/check-breaking-changes`.
//!
//! ```text
//! openapi-compat check RELEASED CURRENT
//!     Lists the changes of CURRENT that break clients of RELEASED. Exit 0 when there is
//!     none or CURRENT raises the major info.version, 1 when there are breaks, 2 on error.
//! openapi-compat kinds
//!     Lists the catalogue of deliberate changes (`wpds_compat::breaks`), one a
//!     line, tab-separated: NAME, break|compatible, what Optic does (refuses|accepts),
//!     DESCRIPTION.
//! openapi-compat break KIND|all SOURCE OUT [VERSION]
//!     Writes SOURCE with the change KIND (or every break) applied to OUT (YAML), with
//!     info.version set to VERSION when given.
//! ```

use std::path::Path;
use std::process::ExitCode;
use wpds_compat::{self as compat, breaks};

fn load(path: &str) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    wpds_document::parse_document(&text).map_err(|e| format!("{path}: {e}"))
}

fn check(released_path: &str, current_path: &str) -> Result<ExitCode, String> {
    let released = load(released_path)?;
    let current = load(current_path)?;
    let verdict = compat::version_gate(&released, &current)?;
    let (old, new) = (&verdict.released_version, &verdict.current_version);
    let count = verdict.breaks.len();
    if count == 0 {
        println!("openapi-compat: no breaking change from {old} ({released_path}) to {new} ({current_path})");
        return Ok(ExitCode::SUCCESS);
    }
    let stream = |line: String| {
        if verdict.passes() {
            println!("{line}");
        } else {
            eprintln!("{line}");
        }
    };
    stream(format!(
        "openapi-compat: {count} breaking change(s) from {old} ({released_path}) to {new} ({current_path}):"
    ));
    for found in &verdict.breaks {
        stream(format!("  - {found}"));
    }
    if verdict.passes() {
        println!("openapi-compat: allowed: {new} is a new major version of {old}");
        Ok(ExitCode::SUCCESS)
    } else {
        let next = compat::major_of(old).map(|m| m + 1)?;
        eprintln!(
            "openapi-compat: FAILED: these break clients of {old}; keep the contract compatible, or publish \
             a new major version ({next}.0.0) with a migration note"
        );
        Ok(ExitCode::from(1))
    }
}

fn kinds() -> ExitCode {
    let listed = breaks::KINDS
        .iter()
        .map(|k| ("break", k))
        .chain(breaks::COMPATIBLE.iter().map(|k| ("compatible", k)));
    for (expected, kind) in listed {
        let optic = if kind.optic_refuses { "refuses" } else { "accepts" };
        println!("{}\t{expected}\t{optic}\t{}", kind.name, kind.description);
    }
    ExitCode::SUCCESS
}

fn write_break(kind: &str, source: &str, out: &str, version: Option<&str>) -> Result<ExitCode, String> {
    let mut doc = load(source)?;
    if kind == "all" {
        for kind in breaks::KINDS {
            (kind.apply)(&mut doc);
        }
    } else {
        let found = breaks::find(kind).ok_or_else(|| format!("unknown break kind {kind:?}"))?;
        (found.apply)(&mut doc);
    }
    if let Some(version) = version {
        breaks::set_version(&mut doc, version);
    }
    let text = yaml_serde::to_string(&yaml(&doc)).map_err(|e| format!("cannot render YAML: {e}"))?;
    std::fs::write(Path::new(out), text).map_err(|e| format!("cannot write {out}: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// `value` as YAML's own value, its numbers YAML numbers. serde_json's `Value` cannot be
/// handed to another format's serializer whatever features it was built with: with
/// `arbitrary_precision` (which the workspace's jsonschema turns on, so every build of the
/// workspace has it) each number serializes as a private `$serde_json::private::Number` map.
fn yaml(value: &serde_json::Value) -> yaml_serde::Value {
    use serde_json::Value as Json;
    use yaml_serde::Value as Yaml;
    match value {
        Json::Null => Yaml::Null,
        Json::Bool(b) => Yaml::Bool(*b),
        Json::Number(n) => Yaml::Number(match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into(),
            (None, Some(u)) => u.into(),
            (None, None) => n.as_f64().unwrap_or(f64::NAN).into(),
        }),
        Json::String(s) => Yaml::String(s.clone()),
        Json::Array(items) => Yaml::Sequence(items.iter().map(yaml).collect()),
        Json::Object(map) => {
            Yaml::Mapping(map.iter().map(|(k, v)| (Yaml::String(k.clone()), yaml(v))).collect())
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["check", released, current] => check(released, current),
        ["kinds"] => Ok(kinds()),
        ["break", kind, source, out] => write_break(kind, source, out, None),
        ["break", kind, source, out, version] => write_break(kind, source, out, Some(version)),
        _ => {
            Err("usage: openapi-compat check RELEASED CURRENT | kinds | break KIND|all SOURCE OUT [VERSION]"
                .to_owned())
        }
    };
    result.unwrap_or_else(|message| {
        eprintln!("openapi-compat: {message}");
        ExitCode::from(2)
    })
}
