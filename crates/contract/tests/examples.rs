//! Every example in the document validates against the schema it illustrates.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

use serde_json::Value;
use std::collections::BTreeSet;
use wpds_contract::document;

/// Compiles `schema` (with the document's components beside it) and lists the errors of
/// `instance`.
fn errors_of(doc: &Value, schema: &Value, instance: &Value) -> Vec<String> {
    let mut root = schema.clone();
    root.as_object_mut()
        .expect("schemas here are objects")
        .insert("components".to_owned(), doc["components"].clone());
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&root)
        .expect("every schema compiles");
    validator.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path().as_str())).collect()
}

fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    wpds_document::deref(doc, value)
}

/// Walks `value`, calling `visit(pointer, schema, example)` for every example found in a
/// media type, parameter, header or schema.
fn walk(doc: &Value, value: &Value, pointer: &str, found: &mut Vec<(String, Value, Value)>) {
    let Some(object) = value.as_object() else {
        if let Some(items) = value.as_array() {
            for (i, item) in items.iter().enumerate() {
                walk(doc, item, &format!("{pointer}/{i}"), found);
            }
        }
        return;
    };
    if let Some(schema) = object.get("schema") {
        if let Some(example) = object.get("example") {
            found.push((format!("{pointer}/example"), schema.clone(), example.clone()));
        }
        if let Some(examples) = object.get("examples").and_then(Value::as_object) {
            for (name, example) in examples {
                let example = resolve(doc, example);
                let value =
                    example.get("value").unwrap_or_else(|| panic!("{pointer}/examples/{name} has no value"));
                found.push((format!("{pointer}/examples/{name}"), schema.clone(), value.clone()));
            }
        }
    }
    if let (Some(Value::Array(examples)), Some(_)) = (object.get("examples"), object.get("type")) {
        for (i, example) in examples.iter().enumerate() {
            found.push((format!("{pointer}/examples/{i}"), value.clone(), example.clone()));
        }
    }
    for (key, child) in object {
        walk(doc, child, &format!("{pointer}/{key}"), found);
    }
}

#[test]
fn every_example_in_the_document_matches_its_schema() {
    let doc = document::parsed();
    let mut found = Vec::new();
    walk(doc, &doc["paths"], "#/paths", &mut found);
    walk(doc, &doc["components"], "#/components", &mut found);
    assert!(found.len() > 60, "expected the document's examples, found only {}", found.len());
    let failures: Vec<String> = found
        .iter()
        .flat_map(|(pointer, schema, example)| {
            errors_of(doc, schema, example).into_iter().map(move |e| format!("{pointer}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "examples that do not match their schemas:\n{}", failures.join("\n"));
}

#[test]
fn an_example_that_breaks_its_schema_is_caught() {
    let doc = document::parsed();
    let schema = serde_json::json!({"$ref": "#/components/schemas/SetTimeLogCellRequest"});
    let bad =
        serde_json::json!({"projectId": "7", "date": "2023-02-29", "hours": "7.5", "expectedVersion": 1});
    assert_eq!(errors_of(doc, &schema, &bad).len(), 1);
}

/// Every `operationId` under the document's paths, read without the operation model (so an
/// operation the model left out would show).
fn operation_ids(doc: &Value) -> BTreeSet<String> {
    let items = doc["paths"].as_object().into_iter().flat_map(|paths| paths.values());
    let ops = items.filter_map(Value::as_object).flat_map(|item| item.values());
    ops.filter_map(|op| op.get("operationId")?.as_str().map(str::to_owned)).collect()
}

#[test]
fn every_operation_has_the_metadata_clients_rely_on() {
    let doc = document::parsed();
    let ops = wpds_document::operations::collect(doc);
    assert!(!ops.is_empty(), "the document has operations");
    let ids: BTreeSet<String> = ops.iter().map(|op| op.id.clone()).collect();
    assert_eq!(ids.len(), ops.len(), "each operationId once");
    assert_eq!(ids, operation_ids(doc), "every operation of the document is checked");
    for op in &ops {
        let raw = &doc["paths"][&op.path][op.method.to_lowercase()];
        for key in ["operationId", "summary", "description"] {
            assert!(raw[key].as_str().is_some_and(|s| !s.is_empty()), "{}: no {key}", op.id);
        }
        assert_eq!(raw["tags"].as_array().map(Vec::len), Some(1), "{}: exactly one tag", op.id);
        for (status, response) in raw["responses"].as_object().unwrap() {
            let response = resolve(doc, response);
            let media = if status.starts_with('2') { "application/json" } else { "application/problem+json" };
            let content = &response["content"][media];
            assert!(content.is_object(), "{} {status}: no {media} content", op.id);
            assert!(
                content["examples"].as_object().is_some_and(|e| !e.is_empty()),
                "{} {status}: no example",
                op.id
            );
        }
    }
}

/// Every object of the document shaped like a problem (`type`, `code`, `status`).
fn problems_in(value: &Value, pointer: &str, found: &mut Vec<(String, String, i64, String)>) {
    if let Some(object) = value.as_object() {
        if let (Some(code), Some(status), Some(kind)) = (
            object.get("code").and_then(Value::as_str),
            object.get("status").and_then(Value::as_i64),
            object.get("type").and_then(Value::as_str),
        ) {
            found.push((pointer.to_owned(), code.to_owned(), status, kind.to_owned()));
        }
        for (key, child) in object {
            problems_in(child, &format!("{pointer}/{key}"), found);
        }
    } else if let Some(items) = value.as_array() {
        for (i, item) in items.iter().enumerate() {
            problems_in(item, &format!("{pointer}/{i}"), found);
        }
    }
}

#[test]
fn every_problem_example_uses_a_catalogued_code_with_its_status() {
    use wpds_contract::problem::ProblemCode;
    let mut found = Vec::new();
    problems_in(document::parsed(), "", &mut found);
    assert!(found.len() > 20, "the document's problem examples were found: {}", found.len());
    for (pointer, code, status, kind) in found {
        let known =
            ProblemCode::from_code(&code).unwrap_or_else(|| panic!("{pointer}: {code} is not catalogued"));
        assert_eq!(i64::from(known.status()), status, "{pointer}: {code}");
        assert_eq!(kind, format!("/problems/{code}"), "{pointer}");
    }
}
