//! The generators on what a contract commonly grows into, shown on small test documents:
//! header parameters, several successful responses (a body and a bodiless `304`, a `201`
//! with `Location`, a `204`), typed response headers; and the build failures, each naming
//! the operation and the construct, for what they do not support.
//!
//! Each generated output is parsed as Rust (syn), so what is asserted is also code.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

use serde_json::{Value, json};
use wpds_codegen::{operations, types};

/// A contract grown past 1.0.0's shapes: `getThing` reads two header parameters and answers
/// 200 with a body and an `ETag`, or 304 with the `ETag` only; `createThing` answers 201
/// with `Location` (required) and `Idempotent-Replayed` (optional); `deleteThing` answers
/// 204 with nothing. The first two are tagged `Things`, the third `Thing archive`.
fn grown() -> Value {
    json!({
        "openapi": "3.1.0",
        "tags": [
            {"name": "Things", "description": "Things and their making."},
            {"name": "Thing archive", "description": "Things gone."}
        ],
        "paths": {
            "/things": {
                "post": {
                    "operationId": "createThing",
                    "tags": ["Things"],
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewThing"}}}},
                    "responses": {
                        "201": {
                            "description": "Created.",
                            "headers": {
                                "Location": {"required": true, "schema": {"type": "string"}},
                                "Idempotent-Replayed": {"schema": {"type": "boolean"}},
                                "RateLimit": {"$ref": "#/components/headers/RateLimit"}
                            },
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}
                        },
                        "400": {"description": "Bad."}
                    }
                }
            },
            "/things/{thingId}": {
                "parameters": [{"name": "thingId", "in": "path", "required": true, "schema": {"type": "string"}}],
                "get": {
                    "operationId": "getThing",
                    "tags": ["Things"],
                    "parameters": [
                        {"name": "If-None-Match", "in": "header", "schema": {"type": "string"}},
                        {"name": "X-Client-Revision", "in": "header", "required": true, "schema": {"type": "integer", "format": "int64"}}
                    ],
                    "responses": {
                        "200": {
                            "description": "The thing.",
                            "headers": {"ETag": {"$ref": "#/components/headers/ETag"}},
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}
                        },
                        "304": {"description": "Unchanged since the ETag sent.", "headers": {"ETag": {"$ref": "#/components/headers/ETag"}}},
                        "404": {"description": "None."}
                    }
                },
                "delete": {
                    "operationId": "deleteThing",
                    "tags": ["Thing archive"],
                    "responses": {"204": {"description": "Gone."}}
                }
            }
        },
        "components": {
            "schemas": {
                "Thing": {"type": "object", "properties": {"id": {"type": "string"}}},
                "NewThing": {"type": "object", "additionalProperties": false, "properties": {"name": {"type": "string"}}}
            },
            "headers": {
                "ETag": {"required": true, "schema": {"type": "string"}},
                "RateLimit": {"schema": {"type": "string"}}
            }
        }
    })
}

/// `code` parsed as a Rust file: panics with the parser's message otherwise.
fn parses(code: &str) {
    if let Err(e) = syn::parse_file(code) {
        panic!("the generated code is not Rust: {e}\n{code}");
    }
}

/// `code` with runs of whitespace made single spaces, to match across line breaks.
fn flat(code: &str) -> String {
    code.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn header_parameters_become_a_typed_struct_beside_path_and_query() {
    let code = types::generate(&grown(), "crate::wire");
    parses(&code);
    let code = flat(&code);
    assert!(code.contains("pub struct GetThingHeaders {"), "{code}");
    assert!(
        code.contains(r#"#[serde(rename = "If-None-Match", default, skip_serializing_if = "Option::is_none")] pub if_none_match: Option<String>,"#),
        "{code}"
    );
    assert!(code.contains(r#"#[serde(rename = "X-Client-Revision")] pub x_client_revision: i64,"#), "{code}");
    assert!(code.contains("pub struct GetThingPath {"), "{code}");
    assert!(!code.contains("CreateThingHeaders"), "no header parameters, no struct: {code}");
}

#[test]
fn each_success_is_a_variant_with_its_body_and_the_headers_the_handler_sets() {
    let code = operations::generate(&grown());
    parses(&code);
    let code = flat(&code);
    // 200 with a body and a required header, 304 with the header only.
    assert!(code.contains("pub enum GetThingResponse {"), "{code}");
    assert!(
        code.contains("Ok { /// The response body. body: Thing, #[doc = \"`ETag`. \"] etag: String, },"),
        "{code}"
    );
    assert!(code.contains("NotModified { #[doc = \"`ETag`. \"] etag: String, },"), "{code}");
    // 201: Location required, Idempotent-Replayed optional; RateLimit is the pipeline's.
    assert!(code.contains("Created { /// The response body. body: Thing,"), "{code}");
    assert!(code.contains("location: String,"), "{code}");
    assert!(code.contains("idempotent_replayed: Option<bool>,"), "{code}");
    assert!(!code.contains("rate_limit"), "the pipeline sets RateLimit, not the handler: {code}");
    // 204: nothing at all.
    assert!(code.contains("pub enum DeleteThingResponse { #[doc = \"204: Gone.\"] NoContent, }"), "{code}");
    // What each variant sends.
    assert!(
        code.contains("Self::NotModified { etag } => { let mut answer = Answer::empty(304); answer.header(\"etag\", etag.to_string()); Ok(answer) }"),
        "{code}"
    );
    assert!(
        code.contains("if let Some(value) = idempotent_replayed { answer.header(\"idempotent-replayed\", value.to_string()); }"),
        "{code}"
    );
    assert!(code.contains("Self::NoContent => { let answer = Answer::empty(204); Ok(answer) }"), "{code}");
}

#[test]
fn each_tag_is_a_trait_of_its_operations_and_operations_is_all_of_them() {
    let code = operations::generate(&grown());
    parses(&code);
    let code = flat(&code);
    let things = code.find("pub trait ThingsApi: Send + Sync + 'static {").expect("the Things trait");
    let archive = code.find("pub trait ThingArchiveApi: Send + Sync + 'static {").expect("the archive trait");
    let (create, get, delete) = (
        code.find("fn create_thing(").unwrap(),
        code.find("fn get_thing(").unwrap(),
        code.find("fn delete_thing(").unwrap(),
    );
    assert!(things < create && create < get && get < archive && archive < delete, "{code}");
    assert!(code.contains("#[doc = \"The operations tagged `Things`: Things and their making.\"]"), "{code}");
    assert!(code.contains("pub trait Operations: ThingsApi + ThingArchiveApi {}"), "{code}");
    assert!(code.contains("impl<S: ThingsApi + ThingArchiveApi> Operations for S {}"), "{code}");
}

#[test]
fn the_trait_method_takes_the_headers_and_returns_the_response_enum() {
    let code = flat(&operations::generate(&grown()));
    assert!(
        code.contains("fn get_thing(&self, ctx: RequestContext, path: GetThingPath, headers: GetThingHeaders) -> impl std::future::Future<Output = Result<GetThingResponse, ApiError>> + Send;"),
        "{code}"
    );
    assert!(code.contains("let path = input.path()?; let headers = input.headers()?; svc.get_thing(ctx, path, headers).await"), "{code}");
    // The table lists every status, and the first success as the operation's.
    // The server span's name, `{method} {route}`, is made here once.
    assert!(code.contains("index: 1, id: \"getThing\", method: \"GET\", path: \"/things/{thingId}\", span_name: \"GET /things/{thingId}\", summary: \"\", success_status: 200,"), "{code}");
    assert!(code.contains("statuses: &[200, 304, 404]"), "{code}");
}

/// The build failure `generate` gives for `doc`.
fn build_failure(generate: impl FnOnce() -> String + std::panic::UnwindSafe) -> String {
    let panic = std::panic::catch_unwind(generate).expect_err("the build fails");
    panic.downcast_ref::<String>().cloned().unwrap_or_default()
}

#[test]
fn what_the_generators_do_not_support_fails_the_build_naming_operation_and_construct() {
    let mut doc = grown();
    doc["paths"]["/things"]["post"]["responses"]["201"]["headers"]["Link"] =
        json!({"schema": {"type": "array", "items": {"type": "string"}}});
    assert_eq!(
        build_failure(|| operations::generate(&doc)),
        "createThing: response 201: header `Link`: a array schema is not supported; a response header is a string, integer, number or boolean"
    );

    let mut doc = grown();
    doc["paths"]["/things/{thingId}"]["get"]["parameters"][0]["schema"] = json!({"type": "object"});
    assert_eq!(
        build_failure(|| types::generate(&doc, "crate::wire")),
        "getThing: header parameter `If-None-Match`: a object schema is not supported; a header parameter is a string, integer, number or boolean"
    );

    let mut doc = grown();
    doc["paths"]["/things/{thingId}"]["get"]["parameters"][0]["in"] = json!("cookie");
    assert_eq!(
        build_failure(|| operations::generate(&doc)),
        "getThing: parameter `If-None-Match`: parameters in `cookie` are not supported"
    );

    let mut doc = grown();
    doc["paths"]["/things/{thingId}"]["delete"]["responses"] =
        json!({"default": {"description": "Anything."}});
    assert_eq!(
        build_failure(|| operations::generate(&doc)),
        "deleteThing: response `default` is not supported; name each status (ranges and `default` are not)"
    );

    let mut doc = grown();
    doc["paths"]["/things/{thingId}"]["get"]["responses"]["200"]["headers"]["Body"] =
        json!({"schema": {"type": "string"}});
    assert_eq!(
        build_failure(|| operations::generate(&doc)),
        "getThing: response 200: header `Body` is named like the body field; rename the header"
    );

    for tags in [json!([]), json!(["Things", "Thing archive"])] {
        let mut doc = grown();
        let count = tags.as_array().unwrap().len();
        doc["paths"]["/things/{thingId}"]["get"]["tags"] = tags;
        assert_eq!(
            build_failure(|| operations::generate(&doc)),
            format!(
                "getThing: an operation names exactly one tag, the resource whose handler module implements it; found {count}"
            )
        );
    }
}

/// [`grown`] with a scheme every operation must name its role of, and `getThing` for
/// workspace members.
fn secured() -> Value {
    let mut doc = grown();
    doc["components"]["securitySchemes"] = json!({"bearerAuth": {"type": "http", "scheme": "bearer"}});
    doc["security"] = json!([{"bearerAuth": []}]);
    for (path, method) in [("/things", "post"), ("/things/{thingId}", "delete")] {
        doc["paths"][path][method]["security"] = json!([{"bearerAuth": ["platform-admin"]}]);
    }
    doc["paths"]["/things/{thingId}"]["parameters"][0]["name"] = json!("workspaceId");
    doc["paths"]["/things/{thingId}"]["get"]["security"] = json!([{"bearerAuth": ["workspace-member"]}]);
    doc
}

#[test]
fn who_may_call_an_operation_is_its_own_security_or_the_build_fails_naming_it() {
    let code = flat(&operations::generate(&secured()));
    assert!(code.contains("id: \"getThing\""), "{code}");
    assert!(code.contains("access: Access::WorkspaceMember"), "{code}");
    assert!(code.contains("access: Access::PlatformAdmin"), "{code}");

    let mut doc = secured();
    doc["paths"]["/things/{thingId}"]["get"].as_object_mut().unwrap().remove("security");
    assert_eq!(
        build_failure(|| operations::generate(&doc)),
        "getThing: the operation declares no `security` of its own; every operation names who may call it: \
         `security: [{bearerAuth: [workspace-member]}]`, `[{bearerAuth: [platform-admin]}]`, or `security: []` for a public one"
    );

    let mut doc = secured();
    doc["paths"]["/things/{thingId}"]["get"]["security"] = json!([{"bearerAuth": ["workspace-owner"]}]);
    assert_eq!(
        build_failure(|| operations::generate(&doc)),
        "getThing: unknown role `workspace-owner`; the roles are [\"workspace-member\", \"platform-admin\"]"
    );

    let mut doc = secured();
    doc["paths"]["/things/{thingId}"]["parameters"][0]["name"] = json!("thingId");
    assert_eq!(
        build_failure(|| operations::generate(&doc)),
        "getThing: a `workspace-member` operation needs a `workspaceId` path parameter"
    );
}
