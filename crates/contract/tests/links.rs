//! Every response `links` entry of the document leads somewhere: its `operationId` names an
//! operation of the document, each parameter it sets is one of that operation's
//! parameters, and each `$request.path.…` it reads is a path parameter of the operation it
//! starts from. Redocly, Spectral and the build all accept a misspelt target; without
//! this, only Schemathesis (which follows links) would notice.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

use serde_json::Value;
use wpds_contract::document;
use wpds_document::operations::{OperationInfo, collect};

/// The problems of every link in `doc`, one line each (empty when all lead somewhere).
fn link_errors(doc: &Value) -> Vec<String> {
    let operations = collect(doc);
    let by_id = |id: &str| operations.iter().find(|op| op.id == id);
    let names = |op: &OperationInfo| -> Vec<String> {
        op.path_params
            .iter()
            .chain(&op.query_params)
            .chain(&op.header_params)
            .map(|p| p.name.clone())
            .collect()
    };
    let mut errors = Vec::new();
    let mut seen = 0;
    for from in &operations {
        let raw = &doc["paths"][&from.path][from.method.to_lowercase()];
        for (status, response) in raw["responses"].as_object().into_iter().flatten() {
            let response = wpds_document::deref(doc, response);
            for (name, link) in response["links"].as_object().into_iter().flatten() {
                seen += 1;
                let at = format!("{} {status} link {name}", from.id);
                let Some(target_id) = link["operationId"].as_str() else {
                    errors.push(format!("{at}: no operationId (operationRef is not used here)"));
                    continue;
                };
                let Some(target) = by_id(target_id) else {
                    errors.push(format!("{at}: no operation {target_id:?} in the document"));
                    continue;
                };
                let accepted = names(target);
                for (parameter, expression) in link["parameters"].as_object().into_iter().flatten() {
                    // A parameter may be qualified by its location (`path.projectId`).
                    let bare = parameter.rsplit('.').next().unwrap_or(parameter);
                    if !accepted.iter().any(|n| n == bare) {
                        errors.push(format!("{at}: {target_id} has no parameter {parameter:?}"));
                    }
                    if let Some(read) = expression.as_str().and_then(|e| e.strip_prefix("$request.path."))
                        && !from.path_params.iter().any(|p| p.name == read)
                    {
                        errors.push(format!("{at}: {} has no path parameter {read:?}", from.id));
                    }
                }
            }
        }
    }
    if seen == 0 {
        errors
            .push("no links found: the document's links are gone, or this test reads the wrong place".into());
    }
    errors
}

#[test]
fn every_link_names_an_operation_and_parameters_it_has() {
    let errors = link_errors(document::parsed());
    assert!(errors.is_empty(), "links that lead nowhere:\n{}", errors.join("\n"));
}

/// The first link of the 200 answer of `method` `path` in `doc`.
fn first_link<'a>(doc: &'a mut Value, path: &str, method: &str) -> &'a mut serde_json::Map<String, Value> {
    doc["paths"][path][method]["responses"]["200"]["links"]
        .as_object_mut()
        .and_then(|links| links.values_mut().next())
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("{method} {path} answers 200 with a link"))
}

#[test]
fn a_misspelt_link_target_or_parameter_is_caught() {
    // Arrange: one link's target misspelt, and another's parameter renamed.
    let mut doc = document::parsed().clone();
    first_link(&mut doc, "/v1/workspaces/{workspaceId}/time-log/cells", "put")
        .insert("operationId".into(), "listCommercialReceipt".into());
    let next_page = first_link(
        &mut doc,
        "/v1/workspaces/{workspaceId}/projects/{projectId}/sync-updates/commercial-receipts",
        "get",
    );
    let parameters = next_page["parameters"].as_object_mut().expect("nextPage sets parameters");
    let cursor = parameters.remove("cursor").expect("nextPage sets the cursor");
    parameters.insert("pageCursor".into(), cursor);

    // Act
    let errors = link_errors(&doc);

    // Assert
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors.iter().any(|e| e.contains("no operation \"listCommercialReceipt\"")), "{errors:#?}");
    assert!(errors.iter().any(|e| e.contains("has no parameter \"pageCursor\"")), "{errors:#?}");
}
