//! The problem-code catalogue: `components.x-problem-codes` of the document becomes the
//! `ProblemCode` enum (one variant per code, with its status, title and page text), so a
//! code the server answers with is a name the compiler checks, and nothing on the error
//! path looks a code up at run time.
//!
//! Each entry is `{code, status, title, description}`: `code` snake_case and unique,
//! `status` a 4xx or 5xx, `title` and `description` non-empty text. Anything else fails the
//! build with the entry's JSON pointer.

use crate::names::pascal_case;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write;

/// Where the catalogue lives in the document.
pub const POINTER: &str = "/components/x-problem-codes";

/// One catalogue entry, checked.
struct Entry {
    code: String,
    status: u16,
    title: String,
    description: String,
}

/// Reads and checks the catalogue. Panics (a build failure) naming the entry's pointer on
/// anything malformed.
fn entries(doc: &Value) -> Vec<Entry> {
    let list = doc
        .pointer(POINTER)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{POINTER}: the problem-code catalogue is missing or not a list"));
    let mut seen = BTreeSet::new();
    list.iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("{POINTER}/{i}");
            let text = |key: &str| -> String {
                match item.get(key).and_then(Value::as_str) {
                    Some(s) if !s.trim().is_empty() => s.to_owned(),
                    _ => panic!("{at}/{key}: missing or empty text"),
                }
            };
            if let Some(extra) = item.as_object().and_then(|o| {
                o.keys().find(|k| !["code", "status", "title", "description"].contains(&k.as_str()))
            }) {
                panic!("{at}/{extra}: not a field of a problem code (code, status, title, description)");
            }
            let code = text("code");
            if !code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') || code.starts_with('_') {
                panic!("{at}/code: {code:?} is not snake_case");
            }
            if !seen.insert(code.clone()) {
                panic!("{at}/code: {code:?} is listed twice");
            }
            let status = item
                .get("status")
                .and_then(Value::as_u64)
                .filter(|s| (400..600).contains(s))
                .unwrap_or_else(|| panic!("{at}/status: not a 4xx or 5xx status"));
            Entry { code, status: status as u16, title: text("title"), description: text("description") }
        })
        .collect()
}

/// The Rust source of the `ProblemCode` enum and its methods.
pub fn generate(doc: &Value) -> String {
    let entries = entries(doc);
    let mut out = String::from(
        "// Generated from components.x-problem-codes of openapi/openapi.yaml by wpds-codegen; do not edit.\n\n\
         /// Every problem code the service answers with (`Problem.code`), from the\n\
         /// document's `components.x-problem-codes`.\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\n\
         pub enum ProblemCode {\n",
    );
    for e in &entries {
        let _ = writeln!(out, "    /// `{}` ({}): {}.", e.code, e.status, e.title);
        let _ = writeln!(out, "    {},", pascal_case(&e.code));
    }
    out.push_str("}\n\nimpl ProblemCode {\n    /// Every code, in the document's order.\n    pub const ALL: &'static [ProblemCode] = &[\n");
    for e in &entries {
        let _ = writeln!(out, "        ProblemCode::{},", pascal_case(&e.code));
    }
    out.push_str("    ];\n\n");
    let method = |out: &mut String, doc: &str, name: &str, ty: &str, value: &dyn Fn(&Entry) -> String| {
        let _ =
            writeln!(out, "    /// {doc}\n    pub const fn {name}(self) -> {ty} {{\n        match self {{");
        for e in &entries {
            let _ = writeln!(out, "            ProblemCode::{} => {},", pascal_case(&e.code), value(e));
        }
        out.push_str("        }\n    }\n\n");
    };
    method(&mut out, "The stable snake_case code (`Problem.code`).", "as_str", "&'static str", &|e| {
        format!("{:?}", e.code)
    });
    method(&mut out, "The HTTP status answered with it.", "status", "u16", &|e| e.status.to_string());
    method(&mut out, "The short summary (`Problem.title`).", "title", "&'static str", &|e| {
        format!("{:?}", e.title)
    });
    method(
        &mut out,
        "What it means and what a client can do about it (the `/problems/{code}` page).",
        "description",
        "&'static str",
        &|e| format!("{:?}", e.description),
    );
    out.push_str(
        "    /// The code named `code`, if the catalogue has it.\n    \
         pub fn from_code(code: &str) -> Option<ProblemCode> {\n        \
         ProblemCode::ALL.iter().copied().find(|c| c.as_str() == code)\n    }\n}\n\n\
         impl std::fmt::Display for ProblemCode {\n    \
         fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {\n        \
         f.write_str(self.as_str())\n    }\n}\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(codes: Value) -> Value {
        json!({"components": {"x-problem-codes": codes}})
    }

    #[test]
    fn one_variant_per_code_with_its_status_title_and_text() {
        let code = generate(&doc(json!([
            {"code": "version_conflict", "status": 409, "title": "Version conflict", "description": "Stale."},
            {"code": "internal", "status": 500, "title": "Internal error", "description": "Quote the traceId."}
        ])));
        assert!(
            code.contains("    /// `version_conflict` (409): Version conflict.\n    VersionConflict,\n"),
            "{code}"
        );
        assert!(code.contains("    /// `internal` (500): Internal error.\n    Internal,\n}"), "{code}");
        assert!(code.contains("ProblemCode::VersionConflict => \"version_conflict\","), "{code}");
        assert!(code.contains("ProblemCode::Internal => 500,"), "{code}");
        assert!(code.contains("ProblemCode::VersionConflict => \"Stale.\","), "{code}");
    }

    fn failure(codes: Value) -> String {
        let panic = std::panic::catch_unwind(|| generate(&doc(codes))).expect_err("the build fails");
        panic.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn a_malformed_catalogue_fails_naming_the_entry() {
        let ok = json!({"code": "a", "status": 400, "title": "A", "description": "a"});
        assert_eq!(failure(json!([ok, ok])), "/components/x-problem-codes/1/code: \"a\" is listed twice");
        assert_eq!(
            failure(json!([{"code": "NotSnake", "status": 400, "title": "A", "description": "a"}])),
            "/components/x-problem-codes/0/code: \"NotSnake\" is not snake_case"
        );
        assert_eq!(
            failure(json!([{"code": "a", "status": 200, "title": "A", "description": "a"}])),
            "/components/x-problem-codes/0/status: not a 4xx or 5xx status"
        );
        assert_eq!(
            failure(json!([{"code": "a", "status": 400, "title": "", "description": "a"}])),
            "/components/x-problem-codes/0/title: missing or empty text"
        );
        assert!(failure(json!({})).contains("missing or not a list"));
    }
}
