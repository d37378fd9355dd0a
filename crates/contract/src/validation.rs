//! Request validation from the document's own schemas, and the response check for tests.
//!
//! [`Contract::load`] compiles, once, one JSON Schema 2020-12 validator per operation for its
//! path parameters, its query parameters, its header parameters and its body, with format
//! checking on (so `2023-02-29` is not a `date`, and `9223372036854775808` is not an
//! `int64`). Parameters are validated as an object whose properties are the parameters'
//! schemas, closed, so an unknown query parameter is a violation too. Header parameters are
//! read by name (case-insensitively, through [`HeaderSource`]) from the request's headers,
//! only those the document declares: every other header is none of the contract's business.
//! Component references (`#/components/schemas/…`) resolve because every compiled schema
//! carries the document's `components` beside it.
//!
//! [`Contract::validate`] reports every violation at once, each with where it is (`in`), a
//! pointer (RFC 6901 into the body, or the parameter's name), a message and the failing
//! keyword. It never panics on any input.

use crate::document;
use crate::types::{ProblemError, ProblemErrorIn};
use jsonschema::{ValidationError, Validator, error::ValidationErrorKind};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use wpds_document::operations::{OperationInfo, Parameter};

/// Longest message text kept from the validator (values can be long).
const MAX_MESSAGE: usize = 240;

/// The compiled request validators of every operation.
pub struct Contract {
    operations: HashMap<String, OperationValidator>,
}

struct OperationValidator {
    path: Validator,
    query: Validator,
    query_kinds: HashMap<String, ScalarKind>,
    /// The declared header parameters (name, how its text is read) and their validator;
    /// `None` for an operation without any, which then reads no header.
    headers: Option<(Validator, Vec<(String, ScalarKind)>)>,
    body: Option<Validator>,
}

/// The request's headers, as validation reads the declared header parameters: the value of
/// the header `name` (matched case-insensitively), if the request has it. A value that is
/// not UTF-8 is read lossily (and then fails its schema, or is taken as text).
pub trait HeaderSource {
    /// The value of header `name`.
    fn header(&self, name: &str) -> Option<String>;
}

/// No headers at all.
impl HeaderSource for () {
    fn header(&self, _name: &str) -> Option<String> {
        None
    }
}

/// A list of `(name, value)` pairs (the first of a name wins).
impl HeaderSource for &[(&str, &str)] {
    fn header(&self, name: &str) -> Option<String> {
        self.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| (*v).to_owned())
    }
}

/// A request as it arrived, for [`Contract::validate`].
#[derive(Clone, Copy)]
pub struct RawRequest<'a> {
    /// The matched path parameters.
    pub path: &'a [(&'a str, &'a str)],
    /// The raw query string, without `?`.
    pub query: &'a str,
    /// The request's headers.
    pub headers: &'a dyn HeaderSource,
    /// The raw body, for operations that take one.
    pub body: Option<&'a [u8]>,
}

/// How a query parameter's text is read before validation.
#[derive(Clone, Copy)]
enum ScalarKind {
    Integer,
    Number,
    Boolean,
    Text,
}

/// What a request that fails validation breaks: the first violations, ready to list, and
/// how many there are in all. Only [`crate::problem::MAX_LISTED_ERRORS`] are kept, so a
/// request of 85 000 unknown keys costs a count, not 85 000 messages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Violations {
    /// The first violations found.
    pub listed: Vec<ProblemError>,
    /// How many were found in all.
    pub total: usize,
}

impl Violations {
    /// Counts `error`, keeping it when fewer than the listing limit are kept so far.
    pub fn push(&mut self, error: ProblemError) {
        self.total += 1;
        if self.has_room() {
            self.listed.push(error);
        }
    }

    /// Whether another violation would be kept (else it is only counted).
    pub fn has_room(&self) -> bool {
        self.listed.len() < crate::problem::MAX_LISTED_ERRORS
    }

    /// Whether none was found.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

impl From<Vec<ProblemError>> for Violations {
    fn from(listed: Vec<ProblemError>) -> Self {
        Violations { total: listed.len(), listed }
    }
}

/// A request that passed validation, as JSON values ready to deserialise.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRequest {
    /// Path parameters as an object.
    pub path: Value,
    /// Query parameters as an object, numbers and booleans already read.
    pub query: Value,
    /// The declared header parameters present, as an object keyed by their names as the
    /// document writes them, numbers and booleans already read.
    pub headers: Value,
    /// The parsed body, for operations that take one.
    pub body: Option<Value>,
}

impl Contract {
    /// Compiles the validators of every operation of the embedded document.
    pub fn load() -> Result<Self, String> {
        Self::from_document(document::parsed())
    }

    /// Compiles the validators of every operation of `doc`.
    pub fn from_document(doc: &Value) -> Result<Self, String> {
        let components = doc.get("components").cloned().unwrap_or(Value::Null);
        let mut operations = HashMap::new();
        for op in wpds_document::operations::collect(doc) {
            let validator =
                OperationValidator::compile(doc, &components, &op).map_err(|e| format!("{}: {e}", op.id))?;
            operations.insert(op.id.clone(), validator);
        }
        Ok(Contract { operations })
    }

    /// Validates one request of `operation_id`. Returns the parsed request, or every
    /// violation found. Panics only for an `operation_id` that is not in the document,
    /// which the generated routes never pass.
    pub fn validate(&self, operation_id: &str, request: RawRequest<'_>) -> Result<ValidRequest, Violations> {
        self.check(operation_id, request, true)
    }

    /// [`Contract::validate`] for a request whose path [`Contract::validate_path`] has
    /// already accepted: the path is read, not checked again.
    pub fn validate_after_path(
        &self,
        operation_id: &str,
        request: RawRequest<'_>,
    ) -> Result<ValidRequest, Violations> {
        self.check(operation_id, request, false)
    }

    fn check(
        &self,
        operation_id: &str,
        request: RawRequest<'_>,
        check_path: bool,
    ) -> Result<ValidRequest, Violations> {
        let op = self.operation(operation_id);
        let mut errors = Violations::default();

        let path_value = path_object(request.path);
        if check_path {
            collect_errors(&op.path, &path_value, ProblemErrorIn::Path, &mut errors);
        }

        let query_value = parse_query(request.query, &op.query_kinds);
        collect_errors(&op.query, &query_value, ProblemErrorIn::Query, &mut errors);

        let headers_value = match &op.headers {
            Some((validator, kinds)) => {
                let value = read_headers(request.headers, kinds);
                collect_errors(validator, &value, ProblemErrorIn::Header, &mut errors);
                value
            }
            None => Value::Object(Map::new()),
        };

        let body_value = match (&op.body, request.body) {
            (Some(validator), Some(bytes)) if !bytes.is_empty() => match crate::strict_json::parse(bytes) {
                Ok(value) => {
                    collect_errors(validator, &value, ProblemErrorIn::Body, &mut errors);
                    Some(value)
                }
                Err(e) => {
                    errors.push(ProblemError::new(
                        ProblemErrorIn::Body,
                        "",
                        "json",
                        format!("the body is not valid JSON: {e}"),
                    ));
                    None
                }
            },
            (Some(_), _) => {
                errors.push(ProblemError::new(
                    ProblemErrorIn::Body,
                    "",
                    "required",
                    "a JSON request body is required",
                ));
                None
            }
            (None, _) => None,
        };

        if errors.is_empty() {
            Ok(ValidRequest {
                path: path_value,
                query: query_value,
                headers: headers_value,
                body: body_value,
            })
        } else {
            Err(errors)
        }
    }
}

/// Every string of a validated request that holds U+0000 (NUL), which not every engine can
/// store (PostgreSQL refuses it in `text`): one `nul_character` entry per string, naming it
/// like a schema violation. Object keys need no check: every request object is closed, so
/// a key the schema does not name was refused already.
pub fn nul_characters(request: &ValidRequest) -> Vec<ProblemError> {
    let mut found = Vec::new();
    for (location, value) in [
        (ProblemErrorIn::Path, &request.path),
        (ProblemErrorIn::Query, &request.query),
        (ProblemErrorIn::Header, &request.headers),
    ] {
        if let Value::Object(params) = value {
            for (name, value) in params {
                if holds_nul(value) {
                    found.push(nul_error(location, name.clone()));
                }
            }
        }
    }
    if let Some(body) = &request.body {
        let mut pointer = String::new();
        nul_strings_in(body, &mut pointer, &mut found);
    }
    found
}

fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        _ => false,
    }
}

/// Adds an entry for every string under `value`, whose JSON pointer is `pointer`.
fn nul_strings_in(value: &Value, pointer: &mut String, found: &mut Vec<ProblemError>) {
    let depth = pointer.len();
    match value {
        Value::String(text) if text.contains('\0') => {
            found.push(nul_error(ProblemErrorIn::Body, pointer.clone()))
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                pointer.push('/');
                pointer.push_str(&i.to_string());
                nul_strings_in(item, pointer, found);
                pointer.truncate(depth);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                pointer.push('/');
                pointer.push_str(&escape_token(key));
                nul_strings_in(item, pointer, found);
                pointer.truncate(depth);
            }
        }
        _ => {}
    }
}

fn nul_error(location: ProblemErrorIn, pointer: String) -> ProblemError {
    ProblemError::new(location, pointer, "nul_character", "U+0000 (NUL) cannot be stored in text")
}

impl Contract {
    /// Validates only the path parameters of `operation_id`: the contract checks them
    /// before authorisation (a workspace `01` names nothing, so saying so reveals
    /// nothing), the rest of the request after it.
    pub fn validate_path(&self, operation_id: &str, path: &[(&str, &str)]) -> Result<(), Violations> {
        let op = self.operation(operation_id);
        let mut errors = Violations::default();
        collect_errors(&op.path, &path_object(path), ProblemErrorIn::Path, &mut errors);
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }
}

impl Contract {
    /// The validators of `operation_id`; panics for an id not in the document.
    fn operation(&self, operation_id: &str) -> &OperationValidator {
        self.operations.get(operation_id).unwrap_or_else(|| panic!("unknown operation {operation_id}"))
    }
}

/// Path parameters as a JSON object of strings.
fn path_object(path: &[(&str, &str)]) -> Value {
    Value::Object(path.iter().map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned()))).collect())
}

impl OperationValidator {
    fn compile(doc: &Value, components: &Value, op: &OperationInfo) -> Result<Self, String> {
        let path = compile(&parameters_schema(&op.path_params), components)?;
        let query = compile(&parameters_schema(&op.query_params), components)?;
        let kind = |p: &Parameter| (p.name.clone(), scalar_kind(wpds_document::deref(doc, &p.schema)));
        let query_kinds = op.query_params.iter().map(kind).collect();
        let headers = match &op.header_params[..] {
            [] => None,
            params => {
                Some((compile(&parameters_schema(params), components)?, params.iter().map(kind).collect()))
            }
        };
        let body = match &op.body_type {
            Some(name) => {
                Some(compile(&json!({ "$ref": format!("#/components/schemas/{name}") }), components)?)
            }
            None => None,
        };
        Ok(OperationValidator { path, query, query_kinds, headers, body })
    }
}

/// A closed object schema whose properties are the parameters' schemas.
fn parameters_schema(params: &[Parameter]) -> Value {
    let properties: Map<String, Value> = params.iter().map(|p| (p.name.clone(), p.schema.clone())).collect();
    let required: Vec<&str> = params.iter().filter(|p| p.required).map(|p| p.name.as_str()).collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Compiles `schema` with the document's components beside it, formats checked —
/// OpenAPI's integer formats `int32` and `int64` included (see [`IntegerFormat`]).
pub(crate) fn compile(schema: &Value, components: &Value) -> Result<Validator, String> {
    let mut root = schema.clone();
    if let Value::Object(map) = &mut root {
        map.insert("components".to_owned(), components.clone());
    }
    mark_integer_formats(&mut root);
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .with_keyword(INTEGER_FORMAT, |_, value, _| Ok(Box::new(IntegerFormat::new(value))))
        .build(&root)
        .map_err(|e| format!("cannot compile schema: {e}"))
}

/// The keyword that carries `format: int32` / `format: int64` to [`IntegerFormat`] in the
/// compiled copy of a schema (never in the document); its violations are reported under
/// the document's own keyword, `format`.
const INTEGER_FORMAT: &str = "x-wpds-integer-format";

/// Adds [`INTEGER_FORMAT`] beside every `format: int32` or `format: int64`.
///
/// JSON Schema's format checking covers strings only, so without this a number beyond an
/// integer format's range (`9223372036854775808` for an `int64` version) would pass the
/// validator and reach the handler, which cannot hold it.
fn mark_integer_formats(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let format = map.get("format").and_then(Value::as_str);
            if let Some(format @ ("int32" | "int64")) = format {
                let format = Value::String(format.to_owned());
                map.insert(INTEGER_FORMAT.to_owned(), format);
            }
            map.values_mut().for_each(mark_integer_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(mark_integer_formats),
        _ => {}
    }
}

/// OpenAPI's `int32` / `int64` formats: a number that is an integer must lie within the
/// signed 32- or 64-bit range. Anything else (strings, fractions) is left to `type`.
#[derive(Clone, Copy)]
enum IntegerFormat {
    Int32,
    Int64,
}

impl IntegerFormat {
    fn new(format: &Value) -> Self {
        match format.as_str() {
            Some("int32") => IntegerFormat::Int32,
            _ => IntegerFormat::Int64,
        }
    }

    fn name(self) -> &'static str {
        match self {
            IntegerFormat::Int32 => "int32",
            IntegerFormat::Int64 => "int64",
        }
    }
}

impl<'i> jsonschema::Keyword<'i> for IntegerFormat {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            Err(ValidationError::custom(format!("{instance} is not a \"{}\"", self.name())))
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        let Value::Number(number) = instance else { return true };
        // Numbers keep their exact text (see `strict_json`): a fraction, however small,
        // is left to `type`; an integer must lie within the format's range.
        match crate::wire::integer_value(&number.to_string()) {
            None => true,
            Some(None) => false,
            Some(Some(n)) => match self {
                IntegerFormat::Int32 => i32::try_from(n).is_ok(),
                IntegerFormat::Int64 => i64::try_from(n).is_ok(),
            },
        }
    }
}

fn scalar_kind(schema: &Value) -> ScalarKind {
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => ScalarKind::Integer,
        Some("number") => ScalarKind::Number,
        Some("boolean") => ScalarKind::Boolean,
        _ => ScalarKind::Text,
    }
}

/// Reads a query string into an object. A parameter given twice becomes an array (which
/// its scalar schema then refuses); a number or boolean that does not parse stays text
/// (which its `type` then refuses).
fn parse_query(query: &str, kinds: &HashMap<String, ScalarKind>) -> Value {
    let mut object = Map::new();
    for (key, raw) in form_urlencoded::parse(query.as_bytes()) {
        let kind = kinds.get(key.as_ref()).copied().unwrap_or(ScalarKind::Text);
        let value = read_scalar(&raw, kind);
        match object.get_mut(key.as_ref()) {
            Some(Value::Array(values)) => values.push(value),
            Some(existing) => *existing = Value::Array(vec![existing.take(), value]),
            None => {
                object.insert(key.into_owned(), value);
            }
        }
    }
    Value::Object(object)
}

/// Reads the declared header parameters present in `source` into an object keyed by their
/// names as the document writes them.
fn read_headers(source: &dyn HeaderSource, kinds: &[(String, ScalarKind)]) -> Value {
    Value::Object(
        kinds
            .iter()
            .filter_map(|(name, kind)| Some((name.clone(), read_scalar(&source.header(name)?, *kind))))
            .collect(),
    )
}

fn read_scalar(raw: &str, kind: ScalarKind) -> Value {
    let parsed = match kind {
        ScalarKind::Integer => raw.parse::<i64>().ok().map(Value::from),
        ScalarKind::Number => {
            raw.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number)
        }
        ScalarKind::Boolean => match raw {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ScalarKind::Text => None,
    };
    parsed.unwrap_or_else(|| Value::String(raw.to_owned()))
}

/// Adds every violation of `instance` to `out`. Most requests are valid: `is_valid` stops
/// at nothing and builds no error, where `iter_errors` prepares each keyword's error
/// reporting even when none is found (callgrind: 1.1k fewer instructions per write).
fn collect_errors(validator: &Validator, instance: &Value, location: ProblemErrorIn, out: &mut Violations) {
    if validator.is_valid(instance) {
        return;
    }
    for error in validator.iter_errors(instance) {
        push_error(&error, location, out);
    }
}

/// Turns one validator error into entries naming the offending value: a missing or an
/// unexpected property is pointed at itself rather than at its parent object.
fn push_error(error: &ValidationError<'_>, location: ProblemErrorIn, out: &mut Violations) {
    let base = error.instance_path().as_str().to_owned();
    let keyword = match error.kind().keyword() {
        INTEGER_FORMAT => "format".to_owned(),
        keyword => keyword.to_owned(),
    };
    let required;
    let named: &[String] = match error.kind() {
        ValidationErrorKind::Required { property } => {
            required = [property.as_str().map(str::to_owned).unwrap_or_else(|| property.to_string())];
            &required
        }
        // Borrowed: a body of 85 000 unknown keys names them all here.
        ValidationErrorKind::AdditionalProperties { unexpected } => unexpected,
        _ => &[],
    };
    if named.is_empty() {
        let pointer = pointer_for(location, &base);
        out.push(ProblemError::new(location, pointer, keyword, message(error)));
        return;
    }
    for name in named {
        if !out.has_room() {
            out.total += 1; // counted, never spelled out
            continue;
        }
        let pointer = match location {
            ProblemErrorIn::Body => format!("{base}/{}", escape_token(name)),
            _ => name.clone(),
        };
        let text = match error.kind() {
            ValidationErrorKind::Required { .. } => format!("\"{name}\" is a required property"),
            _ => format!("\"{name}\" is not allowed here"),
        };
        out.push(ProblemError::new(location, pointer, keyword.clone(), text));
    }
}

/// A body keeps its JSON pointer; a parameter is named by its name alone.
fn pointer_for(location: ProblemErrorIn, instance_path: &str) -> String {
    match location {
        ProblemErrorIn::Body => instance_path.to_owned(),
        _ => instance_path
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default()
            .replace("~1", "/")
            .replace("~0", "~"),
    }
}

fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn message(error: &ValidationError<'_>) -> String {
    let text = error.to_string();
    if text.len() <= MAX_MESSAGE {
        return text;
    }
    let cut = (0..=MAX_MESSAGE).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    format!("{}…", &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document of one operation taking a required integer header and an optional text
    /// one.
    fn contract() -> Contract {
        Contract::from_document(&json!({
            "paths": {"/things": {"get": {
                "operationId": "listThings",
                "parameters": [
                    {"name": "X-Revision", "in": "header", "required": true,
                     "schema": {"type": "integer", "format": "int64", "minimum": 1}},
                    {"name": "If-None-Match", "in": "header", "schema": {"type": "string", "maxLength": 8}}
                ],
                "responses": {
                    "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Things"}}}},
                    "304": {"description": "unchanged"}
                }
            }}},
            "components": {"schemas": {"Things": {"type": "array"}}}
        }))
        .expect("the document compiles")
    }

    fn validate(headers: &[(&str, &str)]) -> Result<ValidRequest, Violations> {
        contract().validate("listThings", RawRequest { path: &[], query: "", headers: &headers, body: None })
    }

    fn violations(headers: &[(&str, &str)]) -> Vec<(String, String)> {
        let errors = validate(headers).expect_err("refused");
        errors.listed.iter().map(|e| (e.pointer.clone(), e.keyword.clone())).collect()
    }

    #[test]
    fn declared_headers_are_read_by_name_case_insensitively_and_typed() {
        let valid = validate(&[("x-revision", "7"), ("if-none-match", "\"abc\""), ("X-Other", "x")]).unwrap();
        assert_eq!(valid.headers, json!({"X-Revision": 7, "If-None-Match": "\"abc\""}));
    }

    #[test]
    fn a_header_that_breaks_its_schema_is_a_violation_in_header() {
        assert_eq!(violations(&[]), [("X-Revision".to_owned(), "required".to_owned())]);
        assert_eq!(violations(&[("X-Revision", "seven")]), [("X-Revision".to_owned(), "type".to_owned())]);
        assert_eq!(violations(&[("X-Revision", "0")]), [("X-Revision".to_owned(), "minimum".to_owned())]);
        assert_eq!(
            violations(&[("X-Revision", "1"), ("If-None-Match", "123456789")]),
            [("If-None-Match".to_owned(), "maxLength".to_owned())]
        );
        let errors = validate(&[]).expect_err("refused");
        assert_eq!(errors.listed[0].r#in, ProblemErrorIn::Header);
    }

    #[test]
    fn an_operation_without_header_parameters_reads_no_header() {
        let contract = Contract::from_document(&json!({
            "paths": {"/t": {"get": {"operationId": "t", "responses": {"204": {"description": "none"}}}}}
        }))
        .unwrap();
        let valid = contract
            .validate(
                "t",
                RawRequest { path: &[], query: "", headers: &&[("X-Revision", "x")][..], body: None },
            )
            .unwrap();
        assert_eq!(valid.headers, json!({}));
    }
}
