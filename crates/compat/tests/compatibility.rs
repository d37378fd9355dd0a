//! The breaking-change gate: `openapi/openapi.yaml` against the last released document, and
//! the gate itself against a catalogue of deliberate breaks and compatible changes.
//! `scripts/check-breaking-changes` runs the same check (and Optic) from the command line.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use wpds_compat::{self as compat, breaks};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The released documents, oldest first, as (version from the file name, path).
fn releases() -> Vec<(String, PathBuf)> {
    let dir = repo().join("openapi/released");
    let mut found: Vec<(Vec<u64>, String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .map(|path| {
            let version = path.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 name").to_owned();
            let key =
                version.split('.').map(|p| p.parse().expect("released/MAJOR.MINOR.PATCH.yaml")).collect();
            (key, version, path)
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, version, path)| (version, path)).collect()
}

/// The frozen 1.0.0 document, the base of every deliberate change.
fn release_1_0_0() -> Value {
    wpds_document::load_document(&repo().join("openapi/released/1.0.0.yaml"))
}

#[test]
fn the_current_document_does_not_break_clients_of_the_last_release() {
    let (version, path) = releases().pop().expect("at least one released document");
    let released = wpds_document::load_document(&path);
    let current = wpds_document::load_document(&repo().join("openapi/openapi.yaml"));
    let verdict = compat::version_gate(&released, &current).expect("comparable versions");
    let listed: Vec<String> = verdict.breaks.iter().map(ToString::to_string).collect();
    assert!(
        verdict.passes(),
        "openapi/openapi.yaml ({}) breaks clients of the released {version}; keep it compatible or \
         raise the major version:\n  {}",
        verdict.current_version,
        listed.join("\n  ")
    );
}

#[test]
fn every_released_document_declares_the_version_of_its_file_name() {
    for (version, path) in releases() {
        let doc = wpds_document::load_document(&path);
        assert_eq!(doc["info"]["version"], json!(version), "{}", path.display());
    }
}

#[test]
fn the_frozen_release_compares_equal_to_itself() {
    let doc = release_1_0_0();
    assert_eq!(compat::breaking_changes(&doc, &doc), vec![]);
}

#[test]
fn every_break_is_refused_unless_the_major_version_is_raised() {
    let released = release_1_0_0();
    for kind in breaks::KINDS {
        let mut broken = released.clone();
        (kind.apply)(&mut broken);
        let verdict = compat::version_gate(&released, &broken).expect("comparable versions");
        assert!(!verdict.breaks.is_empty(), "{} ({}) is not reported", kind.name, kind.description);
        assert!(!verdict.passes(), "{} passes without a new major version", kind.name);

        breaks::set_version(&mut broken, "1.1.0");
        assert!(!compat::version_gate(&released, &broken).unwrap().passes(), "{} passes as 1.1.0", kind.name);

        breaks::set_version(&mut broken, "2.0.0");
        let verdict = compat::version_gate(&released, &broken).unwrap();
        assert!(verdict.major_bump && verdict.passes(), "{} is refused as 2.0.0", kind.name);
        assert!(!verdict.breaks.is_empty(), "{}: 2.0.0 still lists its breaks", kind.name);
    }
}

#[test]
fn every_break_applied_at_once_is_allowed_only_by_a_major_version() {
    let released = release_1_0_0();
    let mut broken = released.clone();
    for kind in breaks::KINDS {
        (kind.apply)(&mut broken);
    }
    assert!(!compat::version_gate(&released, &broken).unwrap().passes());
    breaks::set_version(&mut broken, "2.0.0");
    assert!(compat::version_gate(&released, &broken).unwrap().passes());
}

#[test]
fn compatible_changes_are_not_reported() {
    let released = release_1_0_0();
    for kind in breaks::COMPATIBLE {
        let mut changed = released.clone();
        (kind.apply)(&mut changed);
        assert_ne!(changed, released, "{} changes nothing", kind.name);
        let found: Vec<String> =
            compat::breaking_changes(&released, &changed).iter().map(ToString::to_string).collect();
        assert!(
            found.is_empty(),
            "{} ({}) is reported:\n  {}",
            kind.name,
            kind.description,
            found.join("\n  ")
        );
    }
}

#[test]
fn each_break_names_what_changed() {
    let released = release_1_0_0();
    let expect = [
        ("request-pattern-changed", "/requestId: pattern narrowed"),
        ("request-minLength-raised", "/name: minLength narrowed: >= 1 -> >= 3"),
        ("request-maxLength-lowered", "/name: maxLength narrowed: <= 160 -> <= 80"),
        ("request-maxItems-lowered", "/targets: maxItems narrowed: <= 500 -> <= 100"),
        ("request-enum-narrowed", "enum value(s) no longer accepted: \"all\""),
        ("response-enum-widened", "new enum value(s) may be sent: \"archived\""),
        ("response-property-removed", "/notes: property removed from the response"),
        ("request-property-new-required", "/reason: new required request property"),
        ("response-code-removed", "response 409: response code removed"),
        ("operation-removed", "operation removed"),
        ("request-type-changed", "type narrowed: integer no longer accepted (now string)"),
        ("response-header-removed", "header Retry-After: response header removed"),
    ];
    for (name, text) in expect {
        let kind = breaks::find(name).expect("a catalogue entry");
        let mut broken = released.clone();
        (kind.apply)(&mut broken);
        let found: Vec<String> =
            compat::breaking_changes(&released, &broken).iter().map(ToString::to_string).collect();
        assert!(found.iter().any(|f| f.contains(text)), "{name}: no {text:?} in\n  {}", found.join("\n  "));
    }
}

/// The direction of use decides: the same narrowing breaks a request, not a response.
#[test]
fn direction_matters() {
    let doc = |request: Value, response: Value| {
        json!({
            "openapi": "3.1.0", "info": {"title": "t", "version": "1.0.0"},
            "paths": {"/x": {"post": {
                "requestBody": {"required": true, "content": {"application/json": {"schema": request}}},
                "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": response}}}}
            }}}
        })
    };
    let loose = json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 10}}});
    let tight = json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 5}}});
    let old = doc(loose.clone(), loose.clone());
    // Narrowed in the request only: a break. Narrowed in the response only: fine.
    assert_eq!(compat::breaking_changes(&old, &doc(tight.clone(), loose.clone())).len(), 1);
    assert_eq!(compat::breaking_changes(&old, &doc(loose.clone(), tight.clone())), vec![]);
    // Widened in the response: a break; widened in the request: fine.
    let old = doc(tight.clone(), tight.clone());
    assert_eq!(compat::breaking_changes(&old, &doc(tight.clone(), loose.clone())).len(), 1);
    assert_eq!(compat::breaking_changes(&old, &doc(loose, tight)), vec![]);
}

#[test]
fn semantic_versions_are_read_strictly() {
    assert_eq!(compat::major_of("1.0.0"), Ok(1));
    assert_eq!(compat::major_of("2.0.0-rc.1"), Ok(2));
    assert!(compat::major_of("1.0").is_err());
    assert!(compat::major_of("v2.0.0").is_err());
    let mut older = release_1_0_0();
    let mut newer = older.clone();
    breaks::set_version(&mut newer, "2.0.0");
    assert!(compat::version_gate(&newer, &older).is_err(), "a lower major version is an error");
    breaks::set_version(&mut older, "1.0");
    assert!(compat::version_gate(&older, &newer).is_err());
}

/// `openapi-compat break` writes YAML that reads back as the same document.
#[test]
fn rendered_yaml_reads_back_unchanged() {
    let doc = release_1_0_0();
    let text = yaml_serde::to_string(&doc).expect("renders");
    assert_eq!(wpds_document::parse_document(&text).expect("parses"), doc);
}

#[test]
fn naming_the_role_of_a_bearer_requirement_is_documentation_and_changing_it_a_break() {
    let doc = |roles: Value, scheme: Value| {
        json!({
            "openapi": "3.1.0", "info": {"title": "t", "version": "1.0.0"},
            "paths": {"/x": {"get": {
                "security": [{"auth": roles}],
                "responses": {"200": {"description": "ok"}}
            }}},
            "components": {"securitySchemes": {"auth": scheme}}
        })
    };
    let bearer = json!({"type": "http", "scheme": "bearer"});
    let oauth = json!({"type": "oauth2", "flows": {}});
    // Bearer roles are not sent by the client: naming the one the server checks is fine.
    let unnamed = doc(json!([]), bearer.clone());
    assert_eq!(compat::breaking_changes(&unnamed, &doc(json!(["member"]), bearer.clone())), vec![]);
    // Once named, another role is a change of who may call.
    let member = doc(json!(["member"]), bearer.clone());
    assert_eq!(compat::breaking_changes(&member, &doc(json!(["admin"]), bearer)).len(), 1);
    // OAuth scopes are requested by the client: a new one is a break even where none was.
    let scopeless = doc(json!([]), oauth.clone());
    assert_eq!(compat::breaking_changes(&scopeless, &doc(json!(["read"]), oauth)).len(), 1);
}
