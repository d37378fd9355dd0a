//! The operations of the document, as the generators and the request validation see them.
//!
//! [`collect`] reads every operation of the document, in document order, into an
//! [`OperationInfo`]: its method and path, its path, query and header [`Parameter`]s, its
//! request body schema, its successful answers ([`Success`]: status, body schema, the
//! response headers the document declares), its own `security` ([`Security`]) and every
//! status it documents. Only what the document says is recorded here; the Rust names of the
//! generated code (`wpds_codegen::operations`) are derived from it by the generators.
//!
//! What the model cannot represent is refused with a panic naming the operation and the
//! construct (a build failure in the generators, a start-up failure in the server), never
//! skipped: parameters in a cookie, a parameter or header described by `content` instead
//! of `schema`, a `style` other than the default, response ranges (`2XX`) and `default`,
//! media types other than `application/json`, inline request or response body schemas,
//! and `callbacks`. Response `links` are documentation for clients and change nothing the
//! server does: they are read past.

use crate::{deref, ref_name};
use serde_json::Value;

/// HTTP methods an OpenAPI path item may hold, in the order routes are registered.
const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// The one media type of request and response bodies.
pub const JSON: &str = "application/json";

/// Where a parameter is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// A segment of the path (`{name}`).
    Path,
    /// A query-string parameter.
    Query,
    /// A request header (its name is matched case-insensitively).
    Header,
}

impl Location {
    /// The name OpenAPI gives the location (`in`).
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
        }
    }
}

/// A path, query or header parameter of an operation.
#[derive(Debug, Clone)]
pub struct Parameter {
    /// The parameter's name as on the wire.
    pub name: String,
    /// Where it is sent.
    pub location: Location,
    /// Whether the parameter must be present.
    pub required: bool,
    /// The parameter's schema (references left in place).
    pub schema: Value,
    /// The parameter's description, if any.
    pub description: Option<String>,
    /// JSON pointer of the parameter in the document, for error messages.
    pub pointer: String,
}

/// A response header a successful answer declares.
#[derive(Debug, Clone)]
pub struct ResponseHeader {
    /// The header's name as the document writes it (`Idempotent-Replayed`).
    pub name: String,
    /// Whether every such answer carries it.
    pub required: bool,
    /// Its schema (references left in place).
    pub schema: Value,
    /// Its description, if any.
    pub description: Option<String>,
}

/// One successful (2xx or 3xx) answer of an operation.
#[derive(Debug, Clone)]
pub struct Success {
    /// The status.
    pub status: u16,
    /// The response's description.
    pub description: String,
    /// Component name of the JSON body schema; `None` for an answer without a body (`204`,
    /// `304`, a redirect).
    pub body_type: Option<String>,
    /// The response headers it declares, in document order.
    pub headers: Vec<ResponseHeader>,
}

/// An operation's own `security`, as the document writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Security {
    /// The operation has no `security` of its own (the document-wide default applies).
    Inherited,
    /// `security: []`: no credentials needed.
    Public,
    /// The requirements, each a list of `(scheme, role names)`.
    Requirements(Vec<Vec<(String, Vec<String>)>>),
}

impl OperationInfo {
    /// Whether a bearer token is required: the operation's own `security`, or the
    /// document-wide one when it has none.
    pub fn secured(&self) -> bool {
        !matches!(self.security, Security::Public)
    }
}

/// What the generators and the request validation need to know of one operation.
#[derive(Debug, Clone)]
pub struct OperationInfo {
    /// The `operationId` (camelCase).
    pub id: String,
    /// Upper-case HTTP method.
    pub method: String,
    /// The path template, `{name}` for parameters.
    pub path: String,
    /// The operation's summary.
    pub summary: String,
    /// The operation's `tags`, in document order.
    pub tags: Vec<String>,
    /// Path parameters, in document order.
    pub path_params: Vec<Parameter>,
    /// Query parameters, in document order.
    pub query_params: Vec<Parameter>,
    /// Header parameters, in document order.
    pub header_params: Vec<Parameter>,
    /// Component name of the JSON request body schema, if the operation takes a body.
    pub body_type: Option<String>,
    /// The successful answers (2xx and 3xx), ascending by status; at least one.
    pub successes: Vec<Success>,
    /// Who may call, as the operation's own `security` says.
    pub security: Security,
    /// Every documented status code, ascending.
    pub statuses: Vec<u16>,
}

/// Reads a `security` list: empty is [`Security::Public`].
fn security(value: &Value, at: &str) -> Security {
    let list = value.as_array().unwrap_or_else(|| panic!("{at}: `security` must be a list"));
    if list.is_empty() {
        return Security::Public;
    }
    Security::Requirements(
        list.iter()
            .map(|requirement| {
                requirement
                    .as_object()
                    .unwrap_or_else(|| panic!("{at}: a security requirement must be an object"))
                    .iter()
                    .map(|(scheme, roles)| {
                        let roles = roles
                            .as_array()
                            .unwrap_or_else(|| panic!("{at}: the roles of `{scheme}` must be a list"))
                            .iter()
                            .map(|r| {
                                r.as_str().unwrap_or_else(|| panic!("{at}: a role must be text")).to_owned()
                            })
                            .collect();
                        (scheme.clone(), roles)
                    })
                    .collect()
            })
            .collect(),
    )
}

/// Every operation of the document, in document order.
///
/// Panics naming the operation and the construct when it lacks an `operationId`, has no
/// successful response, or uses something the model does not represent (see the module
/// documentation).
pub fn collect(doc: &Value) -> Vec<OperationInfo> {
    let mut ops = Vec::new();
    let paths = doc["paths"].as_object().expect("the document needs `paths`");
    let global_security = doc.get("security").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
    for (path, item) in paths {
        for method in METHODS {
            let Some(op) = item.get(*method) else {
                continue;
            };
            let where_ = format!("{} {path}", method.to_uppercase());
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{where_}: every operation needs an operationId"))
                .to_owned();
            if op.get("callbacks").is_some() {
                panic!("{id}: `callbacks` are not supported");
            }
            let (path_params, query_params, header_params) = parameters(doc, item, op, &id);
            let body_type = op.get("requestBody").map(|body| request_body(doc, body, &id));
            let responses = op["responses"].as_object().unwrap_or_else(|| panic!("{id}: no responses"));
            let mut statuses = Vec::new();
            let mut successes = Vec::new();
            for (key, response) in responses {
                let status: u16 = key.parse().ok().filter(|s| (100..600).contains(s)).unwrap_or_else(|| {
                    panic!("{id}: response `{key}` is not supported; name each status (ranges and `default` are not)")
                });
                statuses.push(status);
                if (200..400).contains(&status) {
                    successes.push(success(doc, response, status, &id));
                }
            }
            if successes.is_empty() {
                panic!("{id}: the operation documents no successful (2xx or 3xx) response");
            }
            successes.sort_by_key(|s| s.status);
            statuses.sort_unstable();
            let security = match op.get("security") {
                Some(own) => security(own, &id),
                None if global_security => Security::Inherited,
                None => Security::Public,
            };
            ops.push(OperationInfo {
                method: method.to_uppercase(),
                path: path.clone(),
                summary: op.get("summary").and_then(Value::as_str).unwrap_or_default().to_owned(),
                tags: op
                    .get("tags")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|tag| {
                        tag.as_str().unwrap_or_else(|| panic!("{id}: a tag must be a string")).to_owned()
                    })
                    .collect(),
                path_params,
                query_params,
                header_params,
                body_type,
                successes,
                security,
                statuses,
                id,
            });
        }
    }
    ops
}

/// The path item's and the operation's parameters, split by location.
fn parameters(
    doc: &Value,
    item: &Value,
    op: &Value,
    id: &str,
) -> (Vec<Parameter>, Vec<Parameter>, Vec<Parameter>) {
    let (mut path, mut query, mut header) = (Vec::new(), Vec::new(), Vec::new());
    let params = item
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(op.get("parameters").and_then(Value::as_array).into_iter().flatten());
    for (index, raw) in params.enumerate() {
        let p = deref(doc, raw);
        let name = p["name"].as_str().unwrap_or_else(|| panic!("{id}: parameter without name")).to_owned();
        let location = match p["in"].as_str().unwrap_or_default() {
            "path" => Location::Path,
            "query" => Location::Query,
            "header" => Location::Header,
            other => panic!("{id}: parameter `{name}`: parameters in `{other}` are not supported"),
        };
        if p.get("content").is_some() {
            panic!("{id}: parameter `{name}`: `content` is not supported; describe it with `schema`");
        }
        let default_style = if location == Location::Query { "form" } else { "simple" };
        if let Some(style) = p.get("style").and_then(Value::as_str).filter(|s| *s != default_style) {
            panic!("{id}: parameter `{name}`: style `{style}` is not supported");
        }
        let parameter = Parameter {
            required: p.get("required") == Some(&Value::Bool(true)),
            schema: p
                .get("schema")
                .cloned()
                .unwrap_or_else(|| panic!("{id}: parameter `{name}` has no schema")),
            description: p.get("description").and_then(Value::as_str).map(str::to_owned),
            pointer: format!("{id}/parameters/{index}"),
            location,
            name,
        };
        match location {
            Location::Path => path.push(parameter),
            Location::Query => query.push(parameter),
            Location::Header => header.push(parameter),
        }
    }
    (path, query, header)
}

/// The component name of a request body's JSON schema.
fn request_body(doc: &Value, body: &Value, id: &str) -> String {
    let content = deref(doc, body)["content"]
        .as_object()
        .unwrap_or_else(|| panic!("{id}: the request body has no `content`"));
    only_json(content.keys(), &format!("{id}: the request body"));
    json_schema_ref(&content[JSON], &format!("{id}: the request body"))
}

/// One successful answer.
fn success(doc: &Value, response: &Value, status: u16, id: &str) -> Success {
    let response = deref(doc, response);
    let at = format!("{id}: response {status}");
    let body_type =
        response.get("content").and_then(Value::as_object).filter(|c| !c.is_empty()).map(|content| {
            only_json(content.keys(), &at);
            json_schema_ref(&content[JSON], &at)
        });
    let headers = response
        .get("headers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, header)| {
            let header = deref(doc, header);
            if header.get("content").is_some() {
                panic!("{at}: header `{name}`: `content` is not supported; describe it with `schema`");
            }
            ResponseHeader {
                name: name.clone(),
                required: header.get("required") == Some(&Value::Bool(true)),
                schema: header
                    .get("schema")
                    .cloned()
                    .unwrap_or_else(|| panic!("{at}: header `{name}` has no schema")),
                description: header.get("description").and_then(Value::as_str).map(str::to_owned),
            }
        })
        .collect();
    Success {
        status,
        description: response.get("description").and_then(Value::as_str).unwrap_or_default().to_owned(),
        body_type,
        headers,
    }
}

/// Panics unless `application/json` is the one media type.
fn only_json<'a>(mut media_types: impl Iterator<Item = &'a String>, at: &str) {
    if let Some(other) = media_types.find(|m| m.as_str() != JSON) {
        panic!("{at}: media type `{other}` is not supported; bodies are `{JSON}` only");
    }
}

/// The component name a media type's schema refers to.
fn json_schema_ref(media: &Value, at: &str) -> String {
    let reference = media["schema"]["$ref"]
        .as_str()
        .unwrap_or_else(|| panic!("{at}: the `{JSON}` schema must be a $ref to a component schema"));
    ref_name(reference).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A document of one operation, `op`, at `GET /things/{id}`.
    fn doc_with(op: Value) -> Value {
        json!({
            "paths": {"/things/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "get": op
            }},
            "components": {
                "schemas": {"Thing": {"type": "object"}},
                "headers": {"ETag": {"required": true, "schema": {"type": "string"}}}
            }
        })
    }

    fn refused(op: Value) -> String {
        let doc = doc_with(op);
        let panic = std::panic::catch_unwind(|| collect(&doc)).expect_err("the model refuses it");
        panic.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    fn body(schema: &str) -> Value {
        json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}})
    }

    #[test]
    fn header_parameters_several_successes_and_response_headers_are_read() {
        let ops = collect(&doc_with(json!({
            "operationId": "getThing",
            "parameters": [
                {"name": "If-None-Match", "in": "header", "schema": {"type": "string"}},
                {"name": "X-Revision", "in": "header", "required": true, "schema": {"type": "integer"}},
                {"name": "limit", "in": "query", "schema": {"type": "integer"}}
            ],
            "responses": {
                "304": {"description": "Unchanged", "headers": {"ETag": {"$ref": "#/components/headers/ETag"}}},
                "200": {"description": "The thing", "content": body("Thing"),
                        "headers": {"ETag": {"$ref": "#/components/headers/ETag"}}},
                "404": {"description": "Not found"}
            }
        })));
        let [op] = &ops[..] else { panic!("one operation") };
        assert_eq!(op.path_params.len(), 1);
        assert_eq!(op.query_params.len(), 1);
        let headers: Vec<_> = op.header_params.iter().map(|p| (p.name.as_str(), p.required)).collect();
        assert_eq!(headers, [("If-None-Match", false), ("X-Revision", true)]);
        let successes: Vec<_> =
            op.successes.iter().map(|s| (s.status, s.body_type.as_deref(), s.headers.len())).collect();
        assert_eq!(successes, [(200, Some("Thing"), 1), (304, None, 1)]);
        assert!(op.successes[1].headers[0].required, "the component header's `required` is read");
        assert_eq!(op.statuses, [200, 304, 404]);
    }

    #[test]
    fn constructs_the_model_does_not_represent_are_refused_naming_operation_and_construct() {
        let ok = json!({"200": {"description": "ok", "content": body("Thing")}});
        let cases = [
            (
                json!({"operationId": "a", "parameters": [{"name": "s", "in": "cookie", "schema": {}}], "responses": ok}),
                "a: parameter `s`: parameters in `cookie` are not supported",
            ),
            (
                json!({"operationId": "b", "parameters": [{"name": "h", "in": "header", "content": {}}], "responses": ok}),
                "b: parameter `h`: `content` is not supported; describe it with `schema`",
            ),
            (
                json!({"operationId": "c", "parameters": [{"name": "q", "in": "query", "style": "deepObject", "schema": {}}], "responses": ok}),
                "c: parameter `q`: style `deepObject` is not supported",
            ),
            (
                json!({"operationId": "d", "responses": {"2XX": {"description": "any"}}}),
                "d: response `2XX` is not supported; name each status (ranges and `default` are not)",
            ),
            (
                json!({"operationId": "e", "responses": {"200": {"description": "csv", "content": {"text/csv": {"schema": {}}}}}}),
                "e: response 200: media type `text/csv` is not supported; bodies are `application/json` only",
            ),
            (
                json!({"operationId": "f", "responses": {"404": {"description": "never found"}}}),
                "f: the operation documents no successful (2xx or 3xx) response",
            ),
            (
                json!({"operationId": "g", "callbacks": {}, "responses": ok}),
                "g: `callbacks` are not supported",
            ),
            (
                json!({"operationId": "h", "responses": {"200": {"description": "x", "content": {"application/json": {"schema": {"type": "object"}}}}}}),
                "h: response 200: the `application/json` schema must be a $ref to a component schema",
            ),
        ];
        for (op, expected) in cases {
            assert_eq!(refused(op), expected);
        }
    }
}
