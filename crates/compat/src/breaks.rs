//! A catalogue of deliberate changes to the released 1.0.0 document
//! (`openapi/released/1.0.0.yaml`): [`KINDS`], one per kind of break the gate must catch,
//! and [`COMPATIBLE`], changes it must let through. The compatibility tests
//! (`crates/compat/tests/compatibility.rs`) and `scripts/check-breaking-changes --self-test`
//! apply each to a scratch copy and assert that the gate refuses every break, accepts it
//! once `info.version` gets a new major version, and accepts every compatible change.
//!
//! The changes name concrete places of the frozen 1.0.0 document, which never changes, so
//! the catalogue does not go stale when `openapi/openapi.yaml` evolves.

use serde_json::{Value, json};

/// One deliberate breaking change.
pub struct Kind {
    /// A short stable name, used on the command line.
    pub name: &'static str,
    /// What the change does to the document.
    pub description: &'static str,
    /// Whether Optic's `breaking-changes` ruleset (the pinned version) refuses it; checked
    /// by `scripts/check-breaking-changes --self-test`. For a compatible change, `true` is
    /// an Optic false positive: the gate refuses that change until a major version.
    pub optic_refuses: bool,
    /// Applies the change.
    pub apply: fn(&mut Value),
}

const ASSIGN: &str =
    "/paths/~1v1~1workspaces~1{workspaceId}~1projects~1{projectId}~1documents~1{documentId}~1type/put";
const RECEIPTS: &str =
    "/paths/~1v1~1workspaces~1{workspaceId}~1projects~1{projectId}~1sync-updates~1commercial-receipts/get";
const REFRESH: &str = "/paths/~1v1~1auth~1refresh/post";

fn at<'a>(doc: &'a mut Value, pointer: &str) -> &'a mut Value {
    doc.pointer_mut(pointer).unwrap_or_else(|| panic!("break catalogue: no {pointer} in the document"))
}

fn schema<'a>(doc: &'a mut Value, path: &str) -> &'a mut Value {
    at(doc, &format!("/components/schemas/{path}"))
}

fn object(value: &mut Value) -> &mut serde_json::Map<String, Value> {
    value.as_object_mut().expect("break catalogue: an object")
}

fn array(value: &mut Value) -> &mut Vec<Value> {
    value.as_array_mut().expect("break catalogue: an array")
}

fn remove_value(list: &mut Value, value: &str) {
    let list = array(list);
    let before = list.len();
    list.retain(|v| v != value);
    assert_ne!(before, list.len(), "break catalogue: {value} not in the list");
}

fn remove_key(map: &mut Value, key: &str) {
    assert!(object(map).shift_remove(key).is_some(), "break catalogue: no key {key}");
}

/// The query parameter of `listCommercialReceipts` named `name`.
fn receipts_parameter<'a>(doc: &'a mut Value, name: &str) -> &'a mut Value {
    array(at(doc, &format!("{RECEIPTS}/parameters")))
        .iter_mut()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
        .unwrap_or_else(|| panic!("break catalogue: no parameter {name}"))
}

/// Every kind of break, in a stable order. `openapi-compat break all` applies them in this
/// order, so each must still find its place after the ones before it.
pub const KINDS: &[Kind] = &[
    Kind {
        name: "operation-removed",
        description: "remove the operation POST /v1/workspaces/{workspaceId}/contacts/company-links",
        optic_refuses: true,
        apply: |doc| remove_key(at(doc, "/paths"), "/v1/workspaces/{workspaceId}/contacts/company-links"),
    },
    Kind {
        name: "response-code-removed",
        description: "remove response 409 of assignDocumentType",
        optic_refuses: true,
        apply: |doc| remove_key(at(doc, &format!("{ASSIGN}/responses")), "409"),
    },
    Kind {
        name: "response-media-type-removed",
        description: "send assignDocumentType's 200 as application/vnd.wpds+json instead of application/json",
        optic_refuses: true,
        apply: |doc| {
            let content = object(at(doc, &format!("{ASSIGN}/responses/200/content")));
            let media = content.shift_remove("application/json").expect("application/json");
            content.insert("application/vnd.wpds+json".to_owned(), media);
        },
    },
    Kind {
        name: "response-header-removed",
        description: "drop the Retry-After header of the shared 429 response",
        optic_refuses: false,
        apply: |doc| remove_key(at(doc, "/components/responses/TooManyRequests/headers"), "Retry-After"),
    },
    Kind {
        name: "response-property-removed",
        description: "remove Document.notes (and its required entry)",
        optic_refuses: true,
        apply: |doc| {
            remove_key(schema(doc, "Document/properties"), "notes");
            remove_value(schema(doc, "Document/required"), "notes");
        },
    },
    Kind {
        name: "response-property-optional",
        description: "Document.name no longer required",
        optic_refuses: true,
        apply: |doc| remove_value(schema(doc, "Document/required"), "name"),
    },
    Kind {
        name: "response-enum-widened",
        description: "add `archived` to Document.status",
        optic_refuses: true,
        apply: |doc| array(schema(doc, "Document/properties/status/enum")).push(json!("archived")),
    },
    Kind {
        name: "response-type-changed",
        description: "Document.version becomes a string",
        optic_refuses: true,
        apply: |doc| {
            *schema(doc, "Document/properties/version") = json!({"type": "string"});
        },
    },
    Kind {
        name: "response-nullable-added",
        description: "Document.name may now be null",
        optic_refuses: true,
        apply: |doc| *schema(doc, "Document/properties/name/type") = json!(["string", "null"]),
    },
    Kind {
        name: "response-format-removed",
        description: "Document.createdAt loses format: date-time",
        optic_refuses: false,
        apply: |doc| remove_key(schema(doc, "Document/properties/createdAt"), "format"),
    },
    Kind {
        name: "response-maximum-raised",
        description: "Problem.status maximum 599 -> 999",
        optic_refuses: false,
        apply: |doc| *schema(doc, "Problem/properties/status/maximum") = json!(999),
    },
    Kind {
        name: "request-body-media-type-removed",
        description: "assignDocumentType accepts application/merge-patch+json instead of application/json",
        optic_refuses: true,
        apply: |doc| {
            let content = object(at(doc, &format!("{ASSIGN}/requestBody/content")));
            let media = content.shift_remove("application/json").expect("application/json");
            content.insert("application/merge-patch+json".to_owned(), media);
        },
    },
    Kind {
        name: "request-property-new-required",
        description: "AssignDocumentTypeRequest gets a new required property `reason`",
        optic_refuses: true,
        apply: |doc| {
            object(schema(doc, "AssignDocumentTypeRequest/properties"))
                .insert("reason".to_owned(), json!({"type": "string"}));
            array(schema(doc, "AssignDocumentTypeRequest/required")).push(json!("reason"));
        },
    },
    Kind {
        name: "request-property-now-required",
        description: "CatalogBulkEditTarget.primaryItemId becomes required",
        optic_refuses: true,
        apply: |doc| array(schema(doc, "CatalogBulkEditTarget/required")).push(json!("primaryItemId")),
    },
    Kind {
        name: "request-property-removed",
        description: "remove SetTimeLogCellRequest.note from a closed request object",
        optic_refuses: false,
        apply: |doc| remove_key(schema(doc, "SetTimeLogCellRequest/properties"), "note"),
    },
    Kind {
        name: "request-enum-narrowed",
        description: "remove `all` from ExportProjectScope.mode",
        optic_refuses: true,
        apply: |doc| remove_value(schema(doc, "ExportProjectScope/properties/mode/enum"), "all"),
    },
    Kind {
        name: "request-const-changed",
        description: "ExportConfiguration.version const 1 -> 2",
        optic_refuses: true,
        apply: |doc| *schema(doc, "ExportConfiguration/properties/version/const") = json!(2),
    },
    Kind {
        name: "request-type-changed",
        description: "AssignDocumentTypeRequest.expectedVersion becomes a string",
        optic_refuses: true,
        apply: |doc| {
            *schema(doc, "AssignDocumentTypeRequest/properties/expectedVersion") = json!({"type": "string"});
        },
    },
    Kind {
        name: "request-nullable-removed",
        description: "AssignDocumentTypeRequest.typeId no longer accepts null",
        optic_refuses: true,
        apply: |doc| *schema(doc, "AssignDocumentTypeRequest/properties/typeId/type") = json!("string"),
    },
    Kind {
        name: "request-pattern-changed",
        description: "CreateExportRequest.requestId pattern accepts lower-case hex only",
        optic_refuses: false,
        apply: |doc| {
            let pattern = schema(doc, "CreateExportRequest/properties/requestId/pattern");
            let text = pattern.as_str().expect("a pattern").replace("a-fA-F", "a-f");
            *pattern = json!(text);
        },
    },
    Kind {
        name: "request-pattern-added",
        description: "AssignDocumentTypeRequest.typeId gets pattern ^[1-9][0-9]*$",
        optic_refuses: false,
        apply: |doc| {
            object(schema(doc, "AssignDocumentTypeRequest/properties/typeId"))
                .insert("pattern".to_owned(), json!("^[1-9][0-9]*$"));
        },
    },
    Kind {
        name: "request-format-changed",
        description: "SetTimeLogCellRequest.date format date -> date-time",
        optic_refuses: false,
        apply: |doc| *schema(doc, "SetTimeLogCellRequest/properties/date/format") = json!("date-time"),
    },
    Kind {
        name: "request-minLength-raised",
        description: "CreateExportRequest.name minLength 1 -> 3",
        optic_refuses: false,
        apply: |doc| *schema(doc, "CreateExportRequest/properties/name/minLength") = json!(3),
    },
    Kind {
        name: "request-maxLength-lowered",
        description: "CreateExportRequest.name maxLength 160 -> 80",
        optic_refuses: false,
        apply: |doc| *schema(doc, "CreateExportRequest/properties/name/maxLength") = json!(80),
    },
    Kind {
        name: "request-minimum-raised",
        description: "SetTimeLogCellRequest.expectedVersion minimum 1 -> 2",
        optic_refuses: false,
        apply: |doc| *schema(doc, "SetTimeLogCellRequest/properties/expectedVersion/minimum") = json!(2),
    },
    Kind {
        name: "request-maximum-lowered",
        description: "SetTimeLogCellRequest.expectedVersion maximum 2^53-1 -> 2^31-1",
        optic_refuses: false,
        apply: |doc| {
            *schema(doc, "SetTimeLogCellRequest/properties/expectedVersion/maximum") = json!(2147483647);
        },
    },
    Kind {
        name: "request-minItems-raised",
        description: "CatalogBulkEditRequest.targets minItems 1 -> 2",
        optic_refuses: false,
        apply: |doc| *schema(doc, "CatalogBulkEditRequest/properties/targets/minItems") = json!(2),
    },
    Kind {
        name: "request-maxItems-lowered",
        description: "CatalogBulkEditRequest.targets maxItems 500 -> 100",
        optic_refuses: false,
        apply: |doc| *schema(doc, "CatalogBulkEditRequest/properties/targets/maxItems") = json!(100),
    },
    Kind {
        name: "query-parameter-new-required",
        description: "listCommercialReceipts gets a new required query parameter `since`",
        optic_refuses: true,
        apply: |doc| {
            array(at(doc, &format!("{RECEIPTS}/parameters"))).push(json!({
                "name": "since", "in": "query", "required": true,
                "description": "Only receipts after this instant.",
                "schema": {"type": "string", "format": "date-time"}
            }));
        },
    },
    Kind {
        name: "query-parameter-now-required",
        description: "listCommercialReceipts' `limit` becomes required",
        optic_refuses: true,
        apply: |doc| {
            *object(receipts_parameter(doc, "limit")).entry("required").or_insert(json!(false)) = json!(true)
        },
    },
    Kind {
        name: "query-parameter-enum-narrowed",
        description: "remove `skipped_already_in_sync` from listCommercialReceipts' `outcome`",
        optic_refuses: true,
        apply: |doc| {
            remove_value(&mut receipts_parameter(doc, "outcome")["schema"]["enum"], "skipped_already_in_sync")
        },
    },
    Kind {
        name: "query-parameter-maximum-lowered",
        description: "listCommercialReceipts' `limit` maximum 100 -> 50",
        optic_refuses: false,
        apply: |doc| receipts_parameter(doc, "limit")["schema"]["maximum"] = json!(50),
    },
    Kind {
        name: "query-parameter-maxLength-lowered",
        description: "listCommercialReceipts' `cursor` maxLength 200 -> 100",
        optic_refuses: false,
        apply: |doc| receipts_parameter(doc, "cursor")["schema"]["maxLength"] = json!(100),
    },
    Kind {
        name: "query-parameter-default-changed",
        description: "listCommercialReceipts' `limit` default 25 -> 10",
        optic_refuses: false,
        apply: |doc| receipts_parameter(doc, "limit")["schema"]["default"] = json!(10),
    },
    Kind {
        name: "query-parameter-removed",
        description: "remove listCommercialReceipts' `outcome` (unknown query parameters are refused)",
        optic_refuses: false,
        apply: |doc| {
            array(at(doc, &format!("{RECEIPTS}/parameters")))
                .retain(|p| p.get("name").and_then(Value::as_str) != Some("outcome"));
        },
    },
    Kind {
        name: "path-parameter-pattern-changed",
        description: "the companyId path parameter accepts at most 10 digits",
        optic_refuses: false,
        apply: |doc| *at(doc, "/components/parameters/companyId/schema/pattern") = json!("^[1-9][0-9]{0,9}$"),
    },
    Kind {
        name: "security-added",
        description: "POST /v1/auth/refresh loses its empty security requirement (now needs a bearer token)",
        optic_refuses: false,
        apply: |doc| remove_key(at(doc, REFRESH), "security"),
    },
];

/// Changes that break no client: the gate must accept them without a new major version.
pub const COMPATIBLE: &[Kind] = &[
    Kind {
        name: "ok-operation-added",
        description: "add an operation GET /v1/workspaces/{workspaceId}/ping",
        optic_refuses: false,
        apply: |doc| {
            object(at(doc, "/paths")).insert(
                "/v1/workspaces/{workspaceId}/ping".to_owned(),
                json!({"get": {
                    "operationId": "ping", "tags": ["Documents"], "summary": "Ping",
                    "description": "Answers 200.",
                    "parameters": [{"$ref": "#/components/parameters/workspaceId"}],
                    "responses": {"200": {"description": "Pong.", "content": {"application/json": {
                        "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}}
                }}),
            );
        },
    },
    Kind {
        name: "ok-response-code-added",
        description: "assignDocumentType may also answer 410",
        optic_refuses: false,
        apply: |doc| {
            object(at(doc, &format!("{ASSIGN}/responses")))
                .insert("410".to_owned(), json!({"$ref": "#/components/responses/NotFound"}));
        },
    },
    Kind {
        name: "ok-response-property-added",
        description: "Document gets a new required property archivedAt (response objects are open)",
        optic_refuses: false,
        apply: |doc| {
            object(schema(doc, "Document/properties"))
                .insert("archivedAt".to_owned(), json!({"type": ["string", "null"], "format": "date-time"}));
            array(schema(doc, "Document/required")).push(json!("archivedAt"));
        },
    },
    Kind {
        name: "ok-response-enum-narrowed",
        description: "Document.status no longer lists `pending`",
        optic_refuses: false,
        apply: |doc| remove_value(schema(doc, "Document/properties/status/enum"), "pending"),
    },
    Kind {
        name: "ok-request-optional-property-added",
        description: "AssignDocumentTypeRequest gets an optional property `comment`",
        optic_refuses: false,
        apply: |doc| {
            object(schema(doc, "AssignDocumentTypeRequest/properties"))
                .insert("comment".to_owned(), json!({"type": "string", "maxLength": 200}));
        },
    },
    Kind {
        name: "ok-request-enum-widened",
        description: "ExportProjectScope.mode also accepts `recent`",
        optic_refuses: false,
        apply: |doc| array(schema(doc, "ExportProjectScope/properties/mode/enum")).push(json!("recent")),
    },
    Kind {
        name: "ok-request-limits-relaxed",
        description: "CreateExportRequest.name maxLength 160 -> 320; targets maxItems 500 -> 1000",
        optic_refuses: false,
        apply: |doc| {
            *schema(doc, "CreateExportRequest/properties/name/maxLength") = json!(320);
            *schema(doc, "CatalogBulkEditRequest/properties/targets/maxItems") = json!(1000);
        },
    },
    Kind {
        name: "ok-request-pattern-removed",
        description: "CreateExportRequest.requestId loses its pattern",
        optic_refuses: false,
        apply: |doc| remove_key(schema(doc, "CreateExportRequest/properties/requestId"), "pattern"),
    },
    Kind {
        name: "ok-request-integer-to-number",
        description: "AssignDocumentTypeRequest.expectedVersion: integer -> number (Optic refuses any type change)",
        optic_refuses: true,
        apply: |doc| {
            *schema(doc, "AssignDocumentTypeRequest/properties/expectedVersion/type") = json!("number")
        },
    },
    Kind {
        name: "ok-optional-query-parameter-added",
        description: "listCommercialReceipts gets an optional query parameter `q`",
        optic_refuses: false,
        apply: |doc| {
            array(at(doc, &format!("{RECEIPTS}/parameters"))).push(json!({
                "name": "q", "in": "query", "required": false, "description": "Search text.",
                "schema": {"type": "string"}
            }));
        },
    },
    Kind {
        name: "ok-path-parameter-renamed",
        description: "assignDocumentType's {documentId} is renamed {docId} (same wire format)",
        optic_refuses: false,
        apply: |doc| {
            let paths = object(at(doc, "/paths"));
            let old = "/v1/workspaces/{workspaceId}/projects/{projectId}/documents/{documentId}/type";
            let mut item = paths.shift_remove(old).expect("the assignDocumentType path");
            let parameters = item["put"]["parameters"].as_array_mut().expect("parameters");
            parameters[2] = json!({"name": "docId", "in": "path", "required": true,
                "description": "The document, in the project.", "schema": {"type": "string"}});
            paths.insert(old.replace("{documentId}", "{docId}"), item);
        },
    },
    Kind {
        name: "ok-descriptions-changed",
        description: "reword descriptions and summaries; raise info.version to 1.0.1",
        optic_refuses: false,
        apply: |doc| {
            *schema(doc, "Document/description") = json!("A document of a project.");
            *at(doc, &format!("{ASSIGN}/summary")) = json!("Assign or clear a document type");
            set_version(doc, "1.0.1");
        },
    },
];

/// The change named `name`, breaking or compatible.
pub fn find(name: &str) -> Option<&'static Kind> {
    KINDS.iter().chain(COMPATIBLE).find(|k| k.name == name)
}

/// Sets `info.version`.
pub fn set_version(doc: &mut Value, version: &str) {
    *at(doc, "/info/version") = json!(version);
}
