//! The operation table, the `Operations` trait and the actix-web route wiring.
//!
//! For every operation of the document the generated code holds:
//! - an entry of `OPERATIONS` (method, path, `operationId`, success status, whether it
//!   takes a bearer token and a body, every documented status);
//! - one method of the `Operations` trait, named after the `operationId`, taking the
//!   operation's generated `…Path`, `…Query` and body types and returning its success body
//!   type, so a handler that is missing or whose types no longer match the document fails
//!   to compile with an error naming the operation;
//! - an actix-web handler that runs the shared request pipeline (`dispatch`) and calls the
//!   trait method, and the route registering it. A path answers 405 with `Allow` for the
//!   methods it lacks.
//!
//! The generated code names `RequestContext`, `Reply`, `ApiError`, `Input`, `dispatch`,
//! `method_not_allowed` and the contract types unqualified: the including module brings
//! them into scope.

use crate::names::{literal, pascal_case, snake_case};
use crate::{deref, ref_name};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;

/// HTTP methods an OpenAPI path item may hold, in the order routes are registered.
const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// A path or query parameter of an operation.
#[derive(Debug, Clone)]
pub struct Parameter {
    /// The parameter's name as on the wire.
    pub name: String,
    /// `path` or `query`.
    pub location: String,
    /// Whether the parameter must be present.
    pub required: bool,
    /// The parameter's schema (references left in place).
    pub schema: Value,
    /// The parameter's description, if any.
    pub description: Option<String>,
    /// JSON pointer of the parameter in the document, for error messages.
    pub pointer: String,
}

/// What the generators need to know of one operation.
#[derive(Debug, Clone)]
pub struct OperationInfo {
    /// The `operationId` (camelCase).
    pub id: String,
    /// The trait method's name (`snake_case` of the id).
    pub method_name: String,
    /// Prefix of the operation's generated types (`PascalCase` of the id).
    pub type_prefix: String,
    /// Upper-case HTTP method.
    pub method: String,
    /// The path template, `{name}` for parameters.
    pub path: String,
    /// The operation's summary.
    pub summary: String,
    /// Path parameters, in document order.
    pub path_params: Vec<Parameter>,
    /// Query parameters, in document order.
    pub query_params: Vec<Parameter>,
    /// Component name of the JSON request body schema, if the operation takes a body.
    pub body_type: Option<String>,
    /// The single 2xx status.
    pub success_status: u16,
    /// Component name of the success body schema.
    pub success_type: String,
    /// Whether a bearer token is required (the operation's or the global `security`).
    pub secured: bool,
    /// Every documented status code, ascending.
    pub statuses: Vec<u16>,
}

/// Every operation of the document, in document order.
///
/// Panics naming the operation when it lacks an `operationId`, has no or several 2xx
/// responses, or uses a body or response that is not a `$ref` to a component schema.
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
            let mut path_params = Vec::new();
            let mut query_params = Vec::new();
            let params = item
                .get("parameters")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .chain(op.get("parameters").and_then(Value::as_array).into_iter().flatten());
            for (index, raw) in params.enumerate() {
                let p = deref(doc, raw);
                let parameter = Parameter {
                    name: p["name"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{id}: parameter without name"))
                        .to_owned(),
                    location: p["in"].as_str().unwrap_or_default().to_owned(),
                    required: p.get("required") == Some(&Value::Bool(true)),
                    schema: p
                        .get("schema")
                        .cloned()
                        .unwrap_or_else(|| panic!("{id}: parameter without schema")),
                    description: p.get("description").and_then(Value::as_str).map(str::to_owned),
                    pointer: format!("{id}/parameters/{index}"),
                };
                match parameter.location.as_str() {
                    "path" => path_params.push(parameter),
                    "query" => query_params.push(parameter),
                    other => panic!("{id}: parameters in `{other}` are not supported"),
                }
            }
            let body_type = op.get("requestBody").map(|body| {
                let body = deref(doc, body);
                let schema = &body["content"]["application/json"]["schema"];
                let reference = schema["$ref"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{id}: the request body must be a $ref to a component schema"));
                ref_name(reference).to_owned()
            });
            let responses = op["responses"].as_object().unwrap_or_else(|| panic!("{id}: no responses"));
            let statuses: Vec<u16> = responses
                .keys()
                .map(|k| k.parse().unwrap_or_else(|_| panic!("{id}: response `{k}` is not a status code")))
                .collect();
            let successes: Vec<u16> = statuses.iter().copied().filter(|s| (200..300).contains(s)).collect();
            let [success_status] = successes[..] else {
                panic!("{id}: exactly one 2xx response is supported, found {successes:?}")
            };
            let success = deref(doc, &responses[&success_status.to_string()]);
            let success_type = success["content"]["application/json"]["schema"]["$ref"]
                .as_str()
                .map(|r| ref_name(r).to_owned())
                .unwrap_or_else(|| {
                    panic!("{id}: the {success_status} body must be a $ref to a component schema")
                });
            let secured = match op.get("security").and_then(Value::as_array) {
                Some(requirements) => !requirements.is_empty(),
                None => global_security,
            };
            let mut sorted = statuses.clone();
            sorted.sort_unstable();
            ops.push(OperationInfo {
                method_name: snake_case(&id),
                type_prefix: pascal_case(&id),
                method: method.to_uppercase(),
                path: path.clone(),
                summary: op.get("summary").and_then(Value::as_str).unwrap_or_default().to_owned(),
                path_params,
                query_params,
                body_type,
                success_status,
                success_type,
                secured,
                statuses: sorted,
                id,
            });
        }
    }
    ops
}

/// Generates the operation table, the `Operations` trait, the actix-web handlers and
/// `configure`, which registers every route.
pub fn generate(doc: &Value) -> String {
    let ops = collect(doc);
    let mut out = String::from("// @generated from openapi/openapi.yaml by wpds-codegen. Do not edit.\n\n");

    out.push_str(
        "/// Every operation of the contract, in document order.\npub const OPERATIONS: &[Operation] = &[\n",
    );
    for op in &ops {
        let _ = writeln!(
            out,
            "    Operation {{ id: {}, method: {}, path: {}, summary: {}, success_status: {}, secured: {}, has_body: {}, statuses: &{:?} }},",
            literal(&op.id),
            literal(&op.method),
            literal(&op.path),
            literal(&op.summary),
            op.success_status,
            op.secured,
            op.body_type.is_some(),
            op.statuses,
        );
    }
    out.push_str("];\n\n");

    out.push_str("/// The operations of the contract: one method per `operationId`.\n///\n");
    out.push_str("/// The server's handlers implement this trait; the routes call it after the request\n");
    out.push_str("/// has been authenticated and validated against the document.\n");
    out.push_str("pub trait Operations: Send + Sync + 'static {\n");
    for op in &ops {
        let _ = writeln!(
            out,
            "    #[doc = {}]",
            literal(&format!("`{}` — `{} {}`: {}", op.id, op.method, op.path, op.summary))
        );
        let _ = writeln!(
            out,
            "    fn {}(&self, ctx: RequestContext{}) -> impl std::future::Future<Output = Result<Reply<{}>, ApiError>> + Send;",
            op.method_name,
            arguments(op, true),
            op.success_type,
        );
    }
    out.push_str("}\n\n");

    for (index, op) in ops.iter().enumerate() {
        let mut extract = String::new();
        if !op.path_params.is_empty() {
            extract.push_str("let path = input.path()?; ");
        }
        if !op.query_params.is_empty() {
            extract.push_str("let query = input.query()?; ");
        }
        if op.body_type.is_some() {
            extract.push_str("let body = input.body()?; ");
        }
        let _ = writeln!(
            out,
            "async fn {name}<S: Operations>(svc: actix_web::web::Data<S>, req: actix_web::HttpRequest, payload: actix_web::web::Payload) -> actix_web::HttpResponse {{\n    \
             dispatch(&OPERATIONS[{index}], req, payload, move |ctx, {input}| async move {{ {extract}svc.{name}(ctx{args}).await }}).await\n}}\n",
            name = op.method_name,
            input = if op.body_type.is_some() { "mut input" } else { "input" },
            args = arguments(op, false),
        );
    }

    let mut by_path: BTreeMap<&str, Vec<&OperationInfo>> = BTreeMap::new();
    for op in &ops {
        by_path.entry(op.path.as_str()).or_default().push(op);
    }
    out.push_str("/// Registers every operation's route; other methods on a known path answer 405.\n");
    out.push_str("pub fn configure<S: Operations>(cfg: &mut actix_web::web::ServiceConfig) {\n");
    for (path, path_ops) in by_path {
        let allow: Vec<&str> = path_ops.iter().map(|op| op.method.as_str()).collect();
        let _ = write!(out, "    cfg.service(actix_web::web::resource({})", literal(path));
        for op in path_ops {
            let _ = write!(
                out,
                "\n        .route(actix_web::web::method(actix_web::http::Method::{}).to({}::<S>))",
                op.method, op.method_name
            );
        }
        let _ = writeln!(
            out,
            "\n        .default_service(actix_web::web::to(|req: actix_web::HttpRequest| method_not_allowed(req, &{allow:?}))));"
        );
    }
    out.push_str("}\n");
    out
}

/// The trait method's parameters after `ctx` (`with_types`), or the call's arguments.
fn arguments(op: &OperationInfo, with_types: bool) -> String {
    let mut args = String::new();
    let prefix = &op.type_prefix;
    if !op.path_params.is_empty() {
        args.push_str(&if with_types { format!(", path: {prefix}Path") } else { ", path".to_owned() });
    }
    if !op.query_params.is_empty() {
        args.push_str(&if with_types { format!(", query: {prefix}Query") } else { ", query".to_owned() });
    }
    if let Some(body) = &op.body_type {
        args.push_str(&if with_types { format!(", body: {body}") } else { ", body".to_owned() });
    }
    args
}
