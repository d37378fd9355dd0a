//! The operation table, the traits of the handlers (one per tag) and the actix-web route
//! wiring.
//!
//! For every operation of the document the generated code holds:
//! - an entry of `OPERATIONS` (method, path, `operationId`, success status, who may call
//!   it (`Access`, from the operation's own `security` and its role name), whether it takes
//!   a body, every documented status);
//! - one method of its tag's trait (`…Api`, one trait per tag of the document: the tag
//!   `Time log` makes `TimeLogApi`), named after the `operationId`, taking the operation's
//!   generated `…Path`, `…Query`, `…Headers` and body types and returning its `…Response`
//!   enum, so a handler that is missing or whose types no longer match the document fails
//!   to compile with an error naming the operation. Each handler module implements its
//!   tag's trait; `Operations` is every tag's trait at once, which the routes need;
//! - the `…Response` enum: one variant per successful (2xx or 3xx) response, named after
//!   its status (`Ok`, `Created`, `NotModified`, …), holding the body (when the response
//!   has one) and one typed field per response header the handler sets (required headers
//!   plain, optional ones `Option`), and its `Respond` impl, which turns it into the
//!   status, JSON body and headers of the answer. A handler that stops setting a declared
//!   header, or returns a status the document does not list, does not compile. The
//!   headers the pipeline itself sets on every answer ([`PIPELINE_HEADERS`]) are not
//!   fields;
//! - an actix-web handler that runs the shared request pipeline (`dispatch`) and calls the
//!   trait method, and the route registering it. A path answers 405 with `Allow` for the
//!   methods it lacks.
//!
//! The generated code names `Access`, `RequestContext`, `Answer`, `Respond`, `ApiError`,
//! `Input`, `dispatch`, `method_not_allowed` and the contract types unqualified: the
//! including module brings them into scope.
//!
//! A construct the generator does not support fails the build naming the operation and the
//! construct: an operation without exactly one tag, a response header whose schema is not a
//! string, integer, number or boolean, or one named like the body field (`body`); and, read
//! by `wpds_document`, everything the document model refuses.

use crate::names::{literal, pascal_case, snake_case};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;
use wpds_document::deref;
use wpds_document::operations::{OperationInfo, ResponseHeader, Security, Success, collect};

/// The Rust names the generated code gives an operation, derived from its `operationId`
/// and its tag.
pub trait RustNames {
    /// The trait method's name (`snake_case` of the id).
    fn method_name(&self) -> String;
    /// Prefix of the operation's generated `…Path` and `…Query` types (`PascalCase` of the id).
    fn type_prefix(&self) -> String;
    /// The operation's one tag. Panics (a build failure) naming the operation when it has
    /// none or several: the tag says which handler module implements it.
    fn tag(&self) -> &str;
    /// The name of its tag's trait: `PascalCase` of the tag, then `Api`.
    fn trait_name(&self) -> String;
}

impl RustNames for OperationInfo {
    fn method_name(&self) -> String {
        snake_case(&self.id)
    }

    fn type_prefix(&self) -> String {
        pascal_case(&self.id)
    }

    fn tag(&self) -> &str {
        match &self.tags[..] {
            [tag] => tag,
            tags => panic!(
                "{}: an operation names exactly one tag, the resource whose handler module implements it; found {}",
                self.id,
                tags.len()
            ),
        }
    }

    fn trait_name(&self) -> String {
        format!("{}Api", pascal_case(self.tag()))
    }
}

/// The response headers the request pipeline sets on every answer of an operation (the
/// rate limiter's standing, the trace id), compared case-insensitively: a success response
/// may declare them, and they are not the handler's to set.
pub const PIPELINE_HEADERS: &[&str] = &["RateLimit-Policy", "RateLimit", "X-Request-Id"];

/// The security scheme every secured operation names.
pub const BEARER_SCHEME: &str = "bearerAuth";

/// The role names an operation's `security` may give `bearerAuth`, and the `Access` variant
/// each becomes.
pub const ROLES: &[(&str, &str)] =
    &[("workspace-member", "WorkspaceMember"), ("platform-admin", "PlatformAdmin")];

/// The `Access` variant of `op`: who may call it, from its own `security`.
///
/// Panics (a build failure) naming the operation when it has no `security` of its own,
/// names another scheme or an unknown role, names several, or is for workspace members
/// without a `workspaceId` path parameter to check membership of.
fn access(op: &OperationInfo) -> &'static str {
    let id = &op.id;
    let requirements = match &op.security {
        Security::Public => return "Public",
        Security::Inherited => panic!(
            "{id}: the operation declares no `security` of its own; every operation names who may call \
             it: `security: [{{{BEARER_SCHEME}: [workspace-member]}}]`, `[{{{BEARER_SCHEME}: [platform-admin]}}]`, \
             or `security: []` for a public one"
        ),
        Security::Requirements(requirements) => requirements,
    };
    let [requirement] = &requirements[..] else {
        panic!("{id}: `security` must hold exactly one requirement, found {}", requirements.len())
    };
    let [(scheme, roles)] = &requirement[..] else {
        panic!("{id}: a security requirement must name only `{BEARER_SCHEME}`")
    };
    if scheme != BEARER_SCHEME {
        panic!("{id}: security scheme `{scheme}` is not supported; use `{BEARER_SCHEME}`");
    }
    let [role] = &roles[..] else {
        panic!("{id}: `{BEARER_SCHEME}` must name exactly one role of {:?}, found {roles:?}", role_names())
    };
    let variant = ROLES
        .iter()
        .find(|(name, _)| name == role)
        .map(|(_, variant)| *variant)
        .unwrap_or_else(|| panic!("{id}: unknown role `{role}`; the roles are {:?}", role_names()));
    if variant == "WorkspaceMember" && !op.path_params.iter().any(|p| p.name == "workspaceId") {
        panic!("{id}: a `workspace-member` operation needs a `workspaceId` path parameter");
    }
    variant
}

fn role_names() -> Vec<&'static str> {
    ROLES.iter().map(|(name, _)| *name).collect()
}

/// Generates the operation table, the tags' traits and `Operations`, the actix-web handlers and
/// `configure`, which registers every route.
pub fn generate(doc: &Value) -> String {
    let ops = collect(doc);
    let mut out = String::from("// @generated from openapi/openapi.yaml by wpds-codegen. Do not edit.\n\n");

    out.push_str(
        "/// Every operation of the contract, in document order.\npub const OPERATIONS: &[Operation] = &[\n",
    );
    for (index, op) in ops.iter().enumerate() {
        let _ = writeln!(
            out,
            "    Operation {{ index: {index}, id: {}, method: {}, path: {}, span_name: {}, summary: {}, success_status: {}, access: Access::{}, has_body: {}, statuses: &{:?} }},",
            literal(&op.id),
            literal(&op.method),
            literal(&op.path),
            literal(&format!("{} {}", op.method, op.path)),
            literal(&op.summary),
            op.successes[0].status,
            access(op),
            op.body_type.is_some(),
            op.statuses,
        );
    }
    out.push_str("];\n\n");

    out.push_str(&traits(doc, &ops));

    for op in &ops {
        out.push_str(&responses(doc, op));
    }

    for (index, op) in ops.iter().enumerate() {
        let mut extract = String::new();
        if !op.path_params.is_empty() {
            extract.push_str("let path = input.path()?; ");
        }
        if !op.query_params.is_empty() {
            extract.push_str("let query = input.query()?; ");
        }
        if !op.header_params.is_empty() {
            extract.push_str("let headers = input.headers()?; ");
        }
        if op.body_type.is_some() {
            extract.push_str("let body = input.body()?; ");
        }
        let _ = writeln!(
            out,
            "async fn {name}<S: Operations>(svc: actix_web::web::Data<S>, req: actix_web::HttpRequest, payload: actix_web::web::Payload) -> actix_web::HttpResponse {{\n    \
             dispatch(&OPERATIONS[{index}], req, payload, move |ctx, {input}| async move {{ {extract}svc.{name}(ctx{args}).await }}).await\n}}\n",
            name = op.method_name(),
            input = if op.path_params.is_empty()
                && op.query_params.is_empty()
                && op.header_params.is_empty()
                && op.body_type.is_none()
            {
                "_input"
            } else {
                "mut input"
            },
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
                op.method,
                op.method_name()
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

/// One trait per tag of the document, in the order of the tags' first operations, each with
/// one method per operation of the tag; and `Operations`, all of them at once.
fn traits(doc: &Value, ops: &[OperationInfo]) -> String {
    let mut by_tag: Vec<(&str, Vec<&OperationInfo>)> = Vec::new();
    for op in ops {
        match by_tag.iter_mut().find(|(tag, _)| *tag == op.tag()) {
            Some((_, tagged)) => tagged.push(op),
            None => by_tag.push((op.tag(), vec![op])),
        }
    }
    let mut out = String::new();
    let mut names = Vec::new();
    for (tag, tagged) in &by_tag {
        let name = tagged[0].trait_name();
        let description = doc["tags"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["name"] == *tag)
            .and_then(|t| t["description"].as_str())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "#[doc = {}]\n#[doc = \"\"]\n#[doc = \"The handler module of this resource implements it; the routes call it after the request has been authenticated and validated against the document.\"]",
            literal(&format!("The operations tagged `{tag}`: {}", description.trim()))
        );
        let _ = writeln!(out, "pub trait {name}: Send + Sync + 'static {{");
        for op in tagged {
            let _ = writeln!(
                out,
                "    #[doc = {}]",
                literal(&format!("`{}` — `{} {}`: {}", op.id, op.method, op.path, op.summary))
            );
            let _ = writeln!(
                out,
                "    fn {}(&self, ctx: RequestContext{}) -> impl std::future::Future<Output = Result<{}Response, ApiError>> + Send;",
                op.method_name(),
                arguments(op, true),
                op.type_prefix(),
            );
        }
        out.push_str("}\n\n");
        names.push(name);
    }
    let all = names.join(" + ");
    let _ = writeln!(
        out,
        "/// Every operation of the contract: the traits of all its tags, which the routes need.\npub trait Operations: {all} {{}}\n\nimpl<S: {all}> Operations for S {{}}\n"
    );
    out
}

/// The trait method's parameters after `ctx` (`with_types`), or the call's arguments.
fn arguments(op: &OperationInfo, with_types: bool) -> String {
    let mut args = String::new();
    let prefix = op.type_prefix();
    if !op.path_params.is_empty() {
        args.push_str(&if with_types { format!(", path: {prefix}Path") } else { ", path".to_owned() });
    }
    if !op.query_params.is_empty() {
        args.push_str(&if with_types { format!(", query: {prefix}Query") } else { ", query".to_owned() });
    }
    if !op.header_params.is_empty() {
        args.push_str(&if with_types {
            format!(", headers: {prefix}Headers")
        } else {
            ", headers".to_owned()
        });
    }
    if let Some(body) = &op.body_type {
        args.push_str(&if with_types { format!(", body: {body}") } else { ", body".to_owned() });
    }
    args
}

/// The variant name of a successful status: its reason phrase (RFC 9110), else `Status{n}`.
fn variant_name(status: u16) -> String {
    let known = match status {
        200 => "Ok",
        201 => "Created",
        202 => "Accepted",
        203 => "NonAuthoritativeInformation",
        204 => "NoContent",
        205 => "ResetContent",
        206 => "PartialContent",
        300 => "MultipleChoices",
        301 => "MovedPermanently",
        302 => "Found",
        303 => "SeeOther",
        304 => "NotModified",
        307 => "TemporaryRedirect",
        308 => "PermanentRedirect",
        _ => return format!("Status{status}"),
    };
    known.to_owned()
}

/// The headers of `success` the handler sets: every declared one but the pipeline's.
fn handler_headers(success: &Success) -> impl Iterator<Item = &ResponseHeader> {
    success.headers.iter().filter(|h| !PIPELINE_HEADERS.iter().any(|p| p.eq_ignore_ascii_case(&h.name)))
}

/// The Rust type of a response header's value. Panics (a build failure) naming the
/// operation, the status and the header for a schema a header cannot carry.
fn header_type(doc: &Value, op: &OperationInfo, status: u16, header: &ResponseHeader) -> &'static str {
    let schema = deref(doc, &header.schema);
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        _ => "typeless",
    };
    match kind {
        "string" => "String",
        "integer" => "i64",
        "number" => "f64",
        "boolean" => "bool",
        other => panic!(
            "{}: response {status}: header `{}`: a {other} schema is not supported; a response header is a string, integer, number or boolean",
            op.id, header.name
        ),
    }
}

/// The operation's `…Response` enum and its `Respond` impl.
fn responses(doc: &Value, op: &OperationInfo) -> String {
    let name = format!("{}Response", op.type_prefix());
    let mut variants = String::new();
    let mut arms = String::new();
    for success in &op.successes {
        let variant = variant_name(success.status);
        let headers: Vec<(&ResponseHeader, String, &str)> = handler_headers(success)
            .map(|h| {
                let field = snake_case(&h.name);
                if field == "body" {
                    panic!(
                        "{}: response {}: header `{}` is named like the body field; rename the header",
                        op.id, success.status, h.name
                    );
                }
                (h, field, header_type(doc, op, success.status, h))
            })
            .collect();
        let _ = writeln!(
            variants,
            "    #[doc = {}]",
            literal(&format!("{}: {}", success.status, success.description.trim()))
        );
        let mut bound = Vec::new();
        let mut fields = String::new();
        if let Some(body) = &success.body_type {
            bound.push("body".to_owned());
            let _ = writeln!(
                fields,
                "        /// The response body.
        body: {body},"
            );
        }
        for (header, field, ty) in &headers {
            let doc_text = header.description.as_deref().unwrap_or("").trim();
            let _ =
                writeln!(fields, "        #[doc = {}]", literal(&format!("`{}`. {doc_text}", header.name)));
            let ty = if header.required { ty.to_string() } else { format!("Option<{ty}>") };
            let _ = writeln!(fields, "        {field}: {ty},");
            bound.push(field.clone());
        }
        // A body alone is a tuple variant (`Ok(body)`); no body and no header a unit one.
        let pattern = match (&success.body_type, headers.is_empty()) {
            (Some(body), true) => {
                let _ = writeln!(variants, "    {variant}({body}),");
                format!("Self::{variant}(body)")
            }
            (None, true) => {
                let _ = writeln!(variants, "    {variant},");
                format!("Self::{variant}")
            }
            _ => {
                let _ = writeln!(variants, "    {variant} {{\n{fields}    }},");
                format!("Self::{variant} {{ {} }}", bound.join(", "))
            }
        };
        let binding = if headers.is_empty() { "answer" } else { "mut answer" };
        let mut arm = match &success.body_type {
            Some(_) => format!("let {binding} = Answer::json({}, &body)?; ", success.status),
            None => format!("let {binding} = Answer::empty({}); ", success.status),
        };
        for (header, field, _) in &headers {
            let wire = literal(&header.name.to_ascii_lowercase());
            if header.required {
                let _ = write!(arm, "answer.header({wire}, {field}.to_string()); ");
            } else {
                let _ = write!(
                    arm,
                    "if let Some(value) = {field} {{ answer.header({wire}, value.to_string()); }} "
                );
            }
        }
        let _ = writeln!(arms, "            {pattern} => {{ {arm}Ok(answer) }}");
    }
    format!(
        "#[doc = {}]\n#[derive(Debug, Clone, PartialEq)]\npub enum {name} {{\n{variants}}}\n\n\
         impl Respond for {name} {{\n    fn into_answer(self) -> Result<Answer, ApiError> {{\n        \
         match self {{\n{arms}        }}\n    }}\n}}\n\n",
        literal(&format!("What `{}` answers on success, one variant per documented status.", op.id)),
    )
}
