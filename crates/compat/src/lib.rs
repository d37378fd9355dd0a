//! The breaking-change gate: backward compatibility between a released contract document
//! and the current one. `scripts/check-breaking-changes` runs it through the
//! `openapi-compat` binary of this crate; `cargo test` runs it in `tests/compatibility.rs`.
//!
//! Rules:
//! - A checking tool, never part of the service: neither the server nor the contract crate
//!   depends on it (`scripts/check-layering` checks this). It reads documents through
//!   `wpds-document` and depends on no other crate of this workspace.
//! - When in doubt, a change is reported: a false alarm costs a person a look, a missed
//!   break costs every client written against the release.
//!
//! [`breaking_changes`] lists every change of the current document that can break a client
//! written against the released one. It walks the operations, not the components, because
//! whether a schema change breaks a client depends on where the schema is used:
//!
//! - in a **request** (parameters, request bodies) the set of values the server accepts
//!   must not shrink: a removed enum value, a new or changed `pattern`, a raised `minLength`
//!   or `minimum`, a lowered `maxLength`, `maximum` or `maxItems`, a new required property,
//!   a narrowed type or a property a closed object no longer lists all refuse requests
//!   that used to be valid;
//! - in a **response** the set of values the server may send must not grow: a removed
//!   property, a property that may now be absent, a new enum value, a widened type or
//!   range, a removed `format` or a changed `pattern` can all surprise a client that
//!   relies on the released document.
//!
//! Operations are matched by method and path template (parameter names do not matter, so
//! renaming `{id}` to `{documentId}` is not a break); parameters by location and name.
//! A removed operation, response code, media type, response header or parameter, a new
//! required parameter or request body, and an operation that starts requiring
//! authentication are breaks too.
//!
//! Limits, deliberately on the safe side:
//! - Regular-expression containment is undecidable in practice, so a `pattern` that is not
//!   byte-for-byte identical counts as narrowed (request) or widened (response).
//! - Composition and the rarer JSON Schema keywords (`allOf`, `anyOf`, `oneOf`, `not`,
//!   `if`/`then`/`else`, `prefixItems`, `patternProperties`, ...) are not analysed: any
//!   change to them is reported as a possible break for a person to judge.
//! - A changed `default` of a request field is reported (clients that omit the field get
//!   a different behaviour); adding or removing a default is not.
//! - New response codes, new optional request fields, new response properties of open
//!   objects and new operations are compatible and not reported.
//!
//! [`version_gate`] decides whether the breaks are allowed: only when the current
//! `info.version` has a higher major version than the released one (semantic versioning).
//! [`breaks`] is the catalogue of deliberate changes the gate is tested against.

pub mod breaks;

use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::sync::LazyLock;

/// Whether a schema describes what a client sends or what it receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Parameters and request bodies: the accepted set must not shrink.
    Request,
    /// Response bodies and headers: the set of values sent must not grow.
    Response,
}

/// One change that can break a client of the released document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Break {
    /// `METHOD /path` of the operation in the released document, or `document`.
    pub operation: String,
    /// Where in the operation: `request body application/json`, `query parameter limit`, ...
    pub place: String,
    /// The position inside the value, as a JSON-pointer-like path (`*` for array items);
    /// empty for the value itself.
    pub path: String,
    /// The released document's schema (or object) that the change concerns.
    pub pointer: String,
    /// What changed and why it breaks clients.
    pub message: String,
    /// Other operations where the same change (same place, path, pointer and message) was
    /// found, e.g. a shared response component.
    pub also: Vec<String>,
}

impl fmt::Display for Break {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.operation)?;
        if !self.place.is_empty() {
            write!(f, " {}", self.place)?;
        }
        if !self.path.is_empty() {
            write!(f, " {}", self.path)?;
        }
        write!(f, ": {}", self.message)?;
        if !self.pointer.is_empty() {
            write!(f, " [{}]", self.pointer)?;
        }
        if !self.also.is_empty() {
            write!(f, " (also in {} other operation(s))", self.also.len())?;
        }
        Ok(())
    }
}

/// The verdict of the version gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `info.version` of the released document.
    pub released_version: String,
    /// `info.version` of the current document.
    pub current_version: String,
    /// The breaking changes found.
    pub breaks: Vec<Break>,
    /// True when the current document raises the major version, which allows breaks.
    pub major_bump: bool,
}

impl Verdict {
    /// True when the current document may be published: no break, or a new major version.
    pub fn passes(&self) -> bool {
        self.breaks.is_empty() || self.major_bump
    }
}

/// Compares the documents and applies the semantic-versioning rule.
///
/// Errors when either `info.version` is not `MAJOR.MINOR.PATCH` (optionally followed by a
/// pre-release or build suffix) or when the current major version is lower than the
/// released one.
pub fn version_gate(released: &Value, current: &Value) -> Result<Verdict, String> {
    let released_version = info_version(released)?;
    let current_version = info_version(current)?;
    let old_major = major_of(&released_version)?;
    let new_major = major_of(&current_version)?;
    if new_major < old_major {
        return Err(format!(
            "the current info.version {current_version} is older than the released {released_version}"
        ));
    }
    Ok(Verdict {
        breaks: breaking_changes(released, current),
        released_version,
        current_version,
        major_bump: new_major > old_major,
    })
}

fn info_version(doc: &Value) -> Result<String, String> {
    doc.pointer("/info/version")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| "the document has no info.version string".to_owned())
}

/// The major version of a semantic version such as `1.2.3` or `2.0.0-rc.1`.
pub fn major_of(version: &str) -> Result<u64, String> {
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() != 3 || !parts.iter().all(numeric) {
        return Err(format!("info.version {version:?} is not a semantic version MAJOR.MINOR.PATCH"));
    }
    parts[0].parse().map_err(|e| format!("info.version {version:?}: {e}"))
}

/// Lists every change of `current` that can break a client of `released`.
pub fn breaking_changes(released: &Value, current: &Value) -> Vec<Break> {
    let mut walker = Walker { old_doc: released, new_doc: current, breaks: Vec::new(), seen: HashSet::new() };
    walker.document();
    let mut merged: Vec<Break> = Vec::new();
    for found in walker.breaks {
        let same = |b: &&mut Break| {
            (&b.place, &b.path, &b.pointer, &b.message)
                == (&found.place, &found.path, &found.pointer, &found.message)
        };
        match merged.iter_mut().find(|b| same(b)) {
            Some(first) => first.also.push(found.operation),
            None => merged.push(found),
        }
    }
    merged
}

/// The schema that admits anything.
static ANY: Value = Value::Bool(true);

/// An empty map, for absent `properties`, `content`, `responses` and `headers`.
static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Keywords whose changes are not analysed; any difference is reported.
const UNANALYSED: [&str; 20] = [
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependentRequired",
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "discriminator",
    "contentMediaType",
    "contentSchema",
];

/// An operation found in a document.
struct Operation<'a> {
    /// `METHOD /path` as written.
    label: String,
    /// JSON pointer of the operation object.
    pointer: String,
    /// The path template as written.
    path: &'a str,
    path_item: &'a Value,
    op: &'a Value,
}

/// What an object says about a property it does not list.
enum Extra<'a> {
    /// `additionalProperties: false` (or a `false` schema).
    Never,
    /// Absent or `true`: anything.
    Any,
    /// A schema, with its pointer.
    Schema(&'a Value, String),
}

struct Walker<'a> {
    old_doc: &'a Value,
    new_doc: &'a Value,
    breaks: Vec<Break>,
    /// Schema pairs already compared, by both pointers and direction.
    seen: HashSet<(String, String, Direction)>,
}

/// Where a comparison happens, for the report.
#[derive(Clone)]
struct At {
    operation: String,
    place: String,
    path: String,
}

impl At {
    fn child(&self, segment: &str) -> At {
        At { path: format!("{}/{}", self.path, escape(segment)), ..self.clone() }
    }
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn pointer_child(pointer: &str, segment: &str) -> String {
    format!("{pointer}/{}", escape(segment))
}

/// `/a/{x}/b/{y}` becomes `/a/{}/b/{}`.
fn normalize_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut depth = 0usize;
    for c in path.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    out.push_str("{}");
                }
            }
            '}' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The names of the path template's parameters, in order.
fn path_parameter_names(path: &str) -> Vec<String> {
    path.split('{').skip(1).filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_owned())).collect()
}

fn operations(doc: &Value) -> BTreeMap<(String, String), Operation<'_>> {
    let mut found = BTreeMap::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else { return found };
    for (path, item) in paths {
        let item = wpds_document::deref(doc, item);
        for method in METHODS {
            if let Some(op) = item.get(method) {
                let key = (normalize_path(path), method.to_owned());
                found.insert(
                    key,
                    Operation {
                        label: format!("{} {path}", method.to_uppercase()),
                        pointer: format!("#/paths/{}/{method}", escape(path)),
                        path,
                        path_item: item,
                        op,
                    },
                );
            }
        }
    }
    found
}

/// An operation's parameters (path-level ones overridden by operation-level ones), keyed by
/// location and name; path parameters by their position in the template, header names
/// case-insensitively.
fn parameters<'a>(doc: &'a Value, op: &Operation<'a>) -> BTreeMap<String, (&'a Value, String)> {
    let positions = path_parameter_names(op.path);
    let mut found = BTreeMap::new();
    let lists = [
        (op.path_item.get("parameters"), op.pointer.rsplit_once('/').map(|(p, _)| p).unwrap_or_default()),
        (op.op.get("parameters"), op.pointer.as_str()),
    ];
    for (list, base) in lists {
        let Some(list) = list.and_then(Value::as_array) else { continue };
        for (i, parameter) in list.iter().enumerate() {
            let pointer = match parameter.get("$ref").and_then(Value::as_str) {
                Some(reference) => reference.to_owned(),
                None => format!("{base}/parameters/{i}"),
            };
            let parameter = wpds_document::deref(doc, parameter);
            let location = parameter.get("in").and_then(Value::as_str).unwrap_or_default();
            let name = parameter.get("name").and_then(Value::as_str).unwrap_or_default();
            let key = match location {
                "path" => match positions.iter().position(|n| n == name) {
                    Some(index) => format!("path #{index}"),
                    None => format!("path {name}"),
                },
                "header" => format!("header {}", name.to_ascii_lowercase()),
                _ => format!("{location} {name}"),
            };
            found.insert(key, (parameter, pointer));
        }
    }
    found
}

/// The operation's request body (references followed) and its pointer.
fn request_body<'a>(doc: &'a Value, op: &Operation<'a>) -> Option<(&'a Value, String)> {
    let raw = op.op.get("requestBody")?;
    let pointer = raw
        .get("$ref")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{}/requestBody", op.pointer));
    Some((wpds_document::deref(doc, raw), pointer))
}

/// Whether `scheme`'s requirement lists are scopes a client requests (oauth2,
/// openIdConnect) rather than role names the server checks.
fn carries_scopes(doc: &Value, scheme: &str) -> bool {
    doc.pointer(&format!("/components/securitySchemes/{}", escape(scheme)))
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| matches!(t, "oauth2" | "openIdConnect"))
}

/// The operation's security alternatives: each a map from scheme name to its scopes.
type Alternatives = Vec<BTreeMap<String, BTreeSet<String>>>;

fn security(doc: &Value, op: &Value) -> Alternatives {
    let list = op.get("security").or_else(|| doc.get("security"));
    // No requirement at all (absent, or `security: []`) is anonymous access.
    let list = match list.and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list,
        _ => return vec![BTreeMap::new()],
    };
    list.iter()
        .map(|requirement| {
            requirement
                .as_object()
                .map(|schemes| {
                    schemes
                        .iter()
                        .map(|(name, scopes)| {
                            let scopes = scopes
                                .as_array()
                                .map(|s| s.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                                .unwrap_or_default();
                            (name.clone(), scopes)
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

fn types(schema: &Value) -> Option<BTreeSet<String>> {
    let mut set: BTreeSet<String> = match schema.get("type") {
        Some(Value::String(t)) => [t.clone()].into(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => return None,
    };
    if schema.get("nullable") == Some(&Value::Bool(true)) {
        set.insert("null".to_owned());
    }
    Some(set)
}

/// True when a value of type `t` is one of `set` (an integer is a number).
fn covers(set: &BTreeSet<String>, t: &str) -> bool {
    set.contains(t) || (t == "integer" && set.contains("number"))
}

/// The allowed values: `enum`, `const`, or both intersected; `None` when unconstrained.
fn allowed_values(schema: &Value) -> Option<Vec<Value>> {
    let listed = schema.get("enum").and_then(Value::as_array).cloned();
    let constant = schema.get("const").cloned();
    match (listed, constant) {
        (None, None) => None,
        (Some(values), None) => Some(values),
        (None, Some(c)) => Some(vec![c]),
        (Some(values), Some(c)) => Some(values.into_iter().filter(|v| *v == c).collect()),
    }
}

/// A numeric bound: the value and whether it is exclusive.
#[derive(Clone, Copy, Debug)]
struct Bound {
    value: f64,
    exact: Option<i128>,
    exclusive: bool,
}

impl Bound {
    fn of(number: &Value, exclusive: bool) -> Option<Bound> {
        let n = number.as_number()?;
        let exact = n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
        Some(Bound { value: n.as_f64()?, exact, exclusive })
    }

    fn cmp_value(&self, other: &Bound) -> Ordering {
        match (self.exact, other.exact) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self.value.partial_cmp(&other.value).unwrap_or(Ordering::Equal),
        }
    }

    /// True when `self`, as a lower bound, admits less than `other`.
    fn lower_stricter_than(&self, other: &Bound) -> bool {
        match self.cmp_value(other) {
            Ordering::Greater => true,
            Ordering::Equal => self.exclusive && !other.exclusive,
            Ordering::Less => false,
        }
    }

    /// True when `self`, as an upper bound, admits less than `other`.
    fn upper_stricter_than(&self, other: &Bound) -> bool {
        match self.cmp_value(other) {
            Ordering::Less => true,
            Ordering::Equal => self.exclusive && !other.exclusive,
            Ordering::Greater => false,
        }
    }

    fn describe(bound: Option<Bound>, lower: bool) -> String {
        match bound {
            None => "none".to_owned(),
            Some(b) => {
                let op = match (lower, b.exclusive) {
                    (true, false) => ">=",
                    (true, true) => ">",
                    (false, false) => "<=",
                    (false, true) => "<",
                };
                match b.exact {
                    Some(v) => format!("{op} {v}"),
                    None => format!("{op} {}", b.value),
                }
            }
        }
    }
}

/// The effective lower (`minimum`/`exclusiveMinimum`) or upper bound of a number schema,
/// accepting both the 3.1 numeric and the 3.0 boolean form of the exclusive keywords.
fn numeric_bound(schema: &Value, lower: bool) -> Option<Bound> {
    let (inclusive_key, exclusive_key) =
        if lower { ("minimum", "exclusiveMinimum") } else { ("maximum", "exclusiveMaximum") };
    let boolean_exclusive = schema.get(exclusive_key) == Some(&Value::Bool(true));
    let inclusive = schema.get(inclusive_key).and_then(|v| Bound::of(v, boolean_exclusive));
    let exclusive = schema.get(exclusive_key).and_then(|v| Bound::of(v, true));
    match (inclusive, exclusive) {
        (Some(a), Some(b)) => {
            let a_stricter = if lower { a.lower_stricter_than(&b) } else { a.upper_stricter_than(&b) };
            Some(if a_stricter { a } else { b })
        }
        (a, b) => a.or(b),
    }
}

fn count(schema: &Value, key: &str) -> Option<Bound> {
    schema.get(key).and_then(|v| Bound::of(v, false))
}

fn render(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Integer and number formats ordered by range: a later one holds every value of an earlier.
fn format_widens(from: &str, to: &str) -> bool {
    matches!((from, to), ("int32", "int64") | ("float", "double"))
}

impl<'a> Walker<'a> {
    fn report(&mut self, at: &At, pointer: &str, message: impl Into<String>) {
        self.breaks.push(Break {
            operation: at.operation.clone(),
            place: at.place.clone(),
            path: at.path.clone(),
            pointer: pointer.to_owned(),
            message: message.into(),
            also: Vec::new(),
        });
    }

    fn document(&mut self) {
        let old_ops = operations(self.old_doc);
        let new_ops = operations(self.new_doc);
        for (key, old) in &old_ops {
            let at = At { operation: old.label.clone(), place: String::new(), path: String::new() };
            match new_ops.get(key) {
                None => self.report(&at, &old.pointer, "operation removed"),
                Some(new) => self.operation(old, new),
            }
        }
    }

    fn operation(&mut self, old: &Operation<'a>, new: &Operation<'a>) {
        let at = At { operation: old.label.clone(), place: String::new(), path: String::new() };
        self.security(&at, old, new);
        self.parameters(&at, old, new);
        self.request_body(&at, old, new);
        self.responses(&at, old, new);
    }

    fn security(&mut self, at: &At, old: &Operation<'a>, new: &Operation<'a>) {
        let old_alternatives = security(self.old_doc, old.op);
        let new_alternatives = security(self.new_doc, new.op);
        for alternative in &old_alternatives {
            // A new alternative that asks for no more than this one still lets its clients in.
            // Role names on a scheme other than oauth2/openIdConnect are not sent by the
            // client: naming roles where the old document named none documents the server's
            // existing check (OpenAPI 3.1 allows it; 3.0 renditions strip them). Changing a
            // named role, or adding one beside others, is a change of who may call.
            let still_accepted = new_alternatives.iter().any(|candidate| {
                candidate.iter().all(|(scheme, scopes)| {
                    alternative.get(scheme).is_some_and(|old_scopes| {
                        scopes.is_subset(old_scopes)
                            || (old_scopes.is_empty() && !carries_scopes(self.new_doc, scheme))
                    })
                })
            });
            if !still_accepted {
                let described = if alternative.is_empty() {
                    "anonymous access".to_owned()
                } else {
                    alternative.keys().cloned().collect::<Vec<_>>().join(" + ")
                };
                self.report(at, &old.pointer, format!("security requirement {described} no longer accepted"));
            }
            for scheme in alternative.keys() {
                let old_scheme =
                    self.old_doc.pointer(&format!("/components/securitySchemes/{}", escape(scheme)));
                let new_scheme =
                    self.new_doc.pointer(&format!("/components/securitySchemes/{}", escape(scheme)));
                let wire = |s: Option<&Value>| {
                    let s = s.cloned().unwrap_or(Value::Null);
                    ["type", "scheme", "in", "name", "bearerFormat"].map(|k| s.get(k).cloned())
                };
                if old_scheme.is_some() && new_scheme.is_some() && wire(old_scheme) != wire(new_scheme) {
                    self.report(
                        at,
                        &format!("#/components/securitySchemes/{}", escape(scheme)),
                        format!("security scheme {scheme} changed how credentials are sent"),
                    );
                }
            }
        }
    }

    fn parameters(&mut self, at: &At, old: &Operation<'a>, new: &Operation<'a>) {
        let old_params = parameters(self.old_doc, old);
        let new_params = parameters(self.new_doc, new);
        for (key, (old_param, old_pointer)) in &old_params {
            let name = old_param.get("name").and_then(Value::as_str).unwrap_or_default();
            let location = old_param.get("in").and_then(Value::as_str).unwrap_or_default();
            let at = At { place: format!("{location} parameter {name}"), ..at.clone() };
            let Some((new_param, new_pointer)) = new_params.get(key) else {
                self.report(&at, old_pointer, "parameter removed: requests that send it are refused");
                continue;
            };
            let required = |p: &Value| p.get("required") == Some(&Value::Bool(true));
            if required(new_param) && !required(old_param) {
                self.report(&at, old_pointer, "optional parameter is now required");
            }
            for key in ["style", "explode", "allowEmptyValue", "allowReserved"] {
                if old_param.get(key) != new_param.get(key) {
                    self.report(
                        &at,
                        old_pointer,
                        format!("{key} changed: the parameter is read differently"),
                    );
                }
            }
            match (old_param.get("schema"), new_param.get("schema")) {
                (Some(o), Some(n)) => self.schema(
                    &at,
                    o,
                    &pointer_child(old_pointer, "schema"),
                    n,
                    &pointer_child(new_pointer, "schema"),
                    Direction::Request,
                ),
                _ => self.content(
                    &at,
                    old_param.get("content"),
                    old_pointer,
                    new_param.get("content"),
                    new_pointer,
                    Direction::Request,
                ),
            }
        }
        for (key, (new_param, _)) in &new_params {
            if !old_params.contains_key(key) && new_param.get("required") == Some(&Value::Bool(true)) {
                let name = new_param.get("name").and_then(Value::as_str).unwrap_or_default();
                let location = new_param.get("in").and_then(Value::as_str).unwrap_or_default();
                let at = At { place: format!("{location} parameter {name}"), ..at.clone() };
                self.report(&at, &old.pointer, "new required parameter");
            }
        }
    }

    fn request_body(&mut self, at: &At, old: &Operation<'a>, new: &Operation<'a>) {
        let at = At { place: "request body".to_owned(), ..at.clone() };
        let required = |b: &Value| b.get("required") == Some(&Value::Bool(true));
        match (request_body(self.old_doc, old), request_body(self.new_doc, new)) {
            (None, Some((new_body, _))) if required(new_body) => {
                self.report(&at, &old.pointer, "new required request body");
            }
            (Some((old_body, old_pointer)), None)
                if old_body.get("content").and_then(Value::as_object).is_some_and(|c| !c.is_empty()) =>
            {
                self.report(&at, &old_pointer, "request body removed: requests that send one may be refused");
            }
            (Some((old_body, old_pointer)), Some((new_body, new_pointer))) => {
                if required(new_body) && !required(old_body) {
                    self.report(&at, &old_pointer, "optional request body is now required");
                }
                self.content(
                    &at,
                    old_body.get("content"),
                    &old_pointer,
                    new_body.get("content"),
                    &new_pointer,
                    Direction::Request,
                );
            }
            _ => {}
        }
    }

    /// Compares the media types of a `content` map.
    fn content(
        &mut self,
        at: &At,
        old: Option<&'a Value>,
        old_pointer: &str,
        new: Option<&'a Value>,
        new_pointer: &str,
        direction: Direction,
    ) {
        let old_content = old.and_then(Value::as_object).unwrap_or(&EMPTY);
        let new_content = new.and_then(Value::as_object).unwrap_or(&EMPTY);
        for (media_type, old_media) in old_content {
            let old_media_pointer = pointer_child(&format!("{old_pointer}/content"), media_type);
            let place = format!("{} {media_type}", at.place);
            let at = At { place, ..at.clone() };
            let Some(new_media) = new_content.get(media_type) else {
                let message = match direction {
                    Direction::Request => "media type no longer accepted",
                    Direction::Response => "media type no longer sent",
                };
                self.report(&at, &old_media_pointer, message);
                continue;
            };
            let new_media_pointer = pointer_child(&format!("{new_pointer}/content"), media_type);
            self.schema(
                &at,
                old_media.get("schema").unwrap_or(&ANY),
                &pointer_child(&old_media_pointer, "schema"),
                new_media.get("schema").unwrap_or(&ANY),
                &pointer_child(&new_media_pointer, "schema"),
                direction,
            );
        }
    }

    fn responses(&mut self, at: &At, old: &Operation<'a>, new: &Operation<'a>) {
        let old_responses = old.op.get("responses").and_then(Value::as_object).unwrap_or(&EMPTY);
        let new_responses = new.op.get("responses").and_then(Value::as_object).unwrap_or(&EMPTY);
        for (code, old_raw) in old_responses {
            let at = At { place: format!("response {code}"), ..at.clone() };
            let ref_or = |raw: &Value, op: &Operation<'a>| {
                raw.get("$ref")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("{}/responses/{}", op.pointer, escape(code)))
            };
            let old_pointer = ref_or(old_raw, old);
            let Some(new_raw) = new_responses.get(code) else {
                self.report(&at, &old_pointer, "response code removed");
                continue;
            };
            let new_pointer = ref_or(new_raw, new);
            let old_response = wpds_document::deref(self.old_doc, old_raw);
            let new_response = wpds_document::deref(self.new_doc, new_raw);
            self.headers(&at, old_response, &old_pointer, new_response, &new_pointer);
            self.content(
                &at,
                old_response.get("content"),
                &old_pointer,
                new_response.get("content"),
                &new_pointer,
                Direction::Response,
            );
        }
    }

    fn headers(&mut self, at: &At, old: &'a Value, old_pointer: &str, new: &'a Value, new_pointer: &str) {
        let old_headers = old.get("headers").and_then(Value::as_object).unwrap_or(&EMPTY);
        let new_headers = new.get("headers").and_then(Value::as_object).unwrap_or(&EMPTY);
        for (name, old_raw) in old_headers {
            let at = At { place: format!("{} header {name}", at.place), ..at.clone() };
            let pointer_of = |raw: &Value, base: &str| {
                raw.get("$ref")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| pointer_child(&format!("{base}/headers"), name))
            };
            let old_header_pointer = pointer_of(old_raw, old_pointer);
            let found = new_headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name));
            let Some((_, new_raw)) = found else {
                self.report(&at, &old_header_pointer, "response header removed");
                continue;
            };
            let new_header_pointer = pointer_of(new_raw, new_pointer);
            let old_header = wpds_document::deref(self.old_doc, old_raw);
            let new_header = wpds_document::deref(self.new_doc, new_raw);
            let required = |h: &Value| h.get("required") == Some(&Value::Bool(true));
            if required(old_header) && !required(new_header) {
                self.report(&at, &old_header_pointer, "response header is no longer always sent");
            }
            if let (Some(o), Some(n)) = (old_header.get("schema"), new_header.get("schema")) {
                self.schema(
                    &at,
                    o,
                    &pointer_child(&old_header_pointer, "schema"),
                    n,
                    &pointer_child(&new_header_pointer, "schema"),
                    Direction::Response,
                );
            }
        }
    }

    /// Follows `$ref`s, keeping the pointer of the schema reached.
    fn follow(doc: &'a Value, mut schema: &'a Value, mut pointer: String) -> (&'a Value, String) {
        let mut hops = 0;
        while let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            hops += 1;
            if hops > 64 {
                break;
            }
            pointer = reference.to_owned();
            schema = wpds_document::resolve(doc, reference);
        }
        (schema, pointer)
    }

    /// Deep equality of two schemas with every `$ref` followed (up to a depth).
    fn resolved_eq(&self, old: &Value, new: &Value, depth: usize) -> bool {
        if depth > 32 {
            return old == new;
        }
        let old = wpds_document::deref(self.old_doc, old);
        let new = wpds_document::deref(self.new_doc, new);
        match (old, new) {
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| self.resolved_eq(v, w, depth + 1)))
            }
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(v, w)| self.resolved_eq(v, w, depth + 1))
            }
            (a, b) => a == b,
        }
    }

    /// Compares a released schema with the current one, in the given direction.
    fn schema(
        &mut self,
        at: &At,
        old: &'a Value,
        old_pointer: &str,
        new: &'a Value,
        new_pointer: &str,
        direction: Direction,
    ) {
        let (old, old_pointer) = Self::follow(self.old_doc, old, old_pointer.to_owned());
        let (new, new_pointer) = Self::follow(self.new_doc, new, new_pointer.to_owned());
        if !self.seen.insert((old_pointer.clone(), new_pointer.clone(), direction)) {
            return;
        }
        let (old_never, new_never) = (*old == Value::Bool(false), *new == Value::Bool(false));
        match direction {
            Direction::Request if old_never => return,
            Direction::Request if new_never => {
                return self.report(at, &old_pointer, "no value is accepted any more");
            }
            Direction::Response if new_never => return,
            Direction::Response if old_never => {
                return self.report(
                    at,
                    &old_pointer,
                    "a value is sent where the released document allowed none",
                );
            }
            _ => {}
        }
        // `true` (and anything that is not an object) has no keywords: it admits anything.
        self.unanalysed(at, &old_pointer, old, new);
        self.types(at, &old_pointer, old, new, direction);
        self.values(at, &old_pointer, old, new, direction);
        self.constraints(at, &old_pointer, old, new, direction);
        self.object(at, &old_pointer, old, &new_pointer, new, direction);
        self.array(at, &old_pointer, old, &new_pointer, new, direction);
    }

    fn unanalysed(&mut self, at: &At, pointer: &str, old: &Value, new: &Value) {
        for key in UNANALYSED {
            let (o, n) = (old.get(key), new.get(key));
            let same = match (o, n) {
                (None, None) => true,
                (Some(o), Some(n)) => self.resolved_eq(o, n, 0),
                _ => false,
            };
            if !same {
                self.report(at, pointer, format!("`{key}` changed; not analysed, so counted as breaking"));
            }
        }
    }

    fn types(&mut self, at: &At, pointer: &str, old: &Value, new: &Value, direction: Direction) {
        let (old_types, new_types) = (types(old), types(new));
        let (from, to) = match direction {
            Direction::Request => (old_types, new_types),
            Direction::Response => (new_types, old_types),
        };
        // Every type in `from` must still be covered by `to`.
        let Some(to) = to else { return };
        let lost: Vec<String> = match &from {
            None => vec!["any type".to_owned()],
            Some(from) => from.iter().filter(|t| !covers(&to, t)).cloned().collect(),
        };
        if lost.is_empty() {
            return;
        }
        let message = match direction {
            Direction::Request => format!(
                "type narrowed: {} no longer accepted (now {})",
                lost.join(", "),
                to.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
            Direction::Response => format!(
                "type widened: {} may now be sent (released: {})",
                lost.join(", "),
                to.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        };
        self.report(at, pointer, message);
    }

    fn values(&mut self, at: &At, pointer: &str, old: &Value, new: &Value, direction: Direction) {
        // A request schema may not drop a value clients send; a response schema may not add
        // one clients do not expect. Either way: the values one side has and the other lacks.
        let missing_from = |have: &[Value], of: &[Value]| -> String {
            of.iter().filter(|v| !have.contains(v)).map(render).collect::<Vec<_>>().join(", ")
        };
        match (direction, allowed_values(old), allowed_values(new)) {
            (Direction::Request, _, None) | (Direction::Response, None, _) => {}
            (Direction::Request, None, Some(_)) => {
                self.report(at, pointer, "now restricted to an enum or const")
            }
            (Direction::Response, Some(_), None) => {
                self.report(at, pointer, "no longer restricted to its enum or const")
            }
            (Direction::Request, Some(old_values), Some(new_values)) => {
                let removed = missing_from(&new_values, &old_values);
                if !removed.is_empty() {
                    self.report(at, pointer, format!("enum value(s) no longer accepted: {removed}"));
                }
            }
            (Direction::Response, Some(old_values), Some(new_values)) => {
                let added = missing_from(&old_values, &new_values);
                if !added.is_empty() {
                    self.report(at, pointer, format!("new enum value(s) may be sent: {added}"));
                }
            }
        }
        if let (Direction::Request, Some(o), Some(n)) = (direction, old.get("default"), new.get("default"))
            && o != n
        {
            let message = format!(
                "default changed from {} to {}: clients that omit it get another behaviour",
                render(o),
                render(n)
            );
            self.report(at, pointer, message);
        }
    }

    fn constraints(&mut self, at: &At, pointer: &str, old: &Value, new: &Value, direction: Direction) {
        // `narrows` is true when the current document admits less than the released one.
        let check = |walker: &mut Self, what: &str, narrows: bool, widens: bool, from: String, to: String| {
            let broken = match direction {
                Direction::Request => narrows,
                Direction::Response => widens,
            };
            if broken {
                let verb = if narrows { "narrowed" } else { "widened" };
                walker.report(at, pointer, format!("{what} {verb}: {from} -> {to}"));
            }
        };
        // Lower bounds: a stricter (or new) one narrows, a looser (or dropped) one widens.
        let lower = |o: Option<Bound>, n: Option<Bound>| match (o, n) {
            (None, None) => (false, false),
            (None, Some(_)) => (true, false),
            (Some(_), None) => (false, true),
            (Some(o), Some(n)) => (n.lower_stricter_than(&o), o.lower_stricter_than(&n)),
        };
        let upper = |o: Option<Bound>, n: Option<Bound>| match (o, n) {
            (None, None) => (false, false),
            (None, Some(_)) => (true, false),
            (Some(_), None) => (false, true),
            (Some(o), Some(n)) => (n.upper_stricter_than(&o), o.upper_stricter_than(&n)),
        };
        for (what, is_lower, o, n) in [
            ("minimum", true, numeric_bound(old, true), numeric_bound(new, true)),
            ("maximum", false, numeric_bound(old, false), numeric_bound(new, false)),
            ("minLength", true, count(old, "minLength"), count(new, "minLength")),
            ("maxLength", false, count(old, "maxLength"), count(new, "maxLength")),
            ("minItems", true, count(old, "minItems"), count(new, "minItems")),
            ("maxItems", false, count(old, "maxItems"), count(new, "maxItems")),
            ("minProperties", true, count(old, "minProperties"), count(new, "minProperties")),
            ("maxProperties", false, count(old, "maxProperties"), count(new, "maxProperties")),
        ] {
            let (narrows, widens) = if is_lower { lower(o, n) } else { upper(o, n) };
            check(self, what, narrows, widens, Bound::describe(o, is_lower), Bound::describe(n, is_lower));
        }
        // multipleOf: the new step must divide the old one (request) or the other way round.
        let step = |s: &Value| s.get("multipleOf").and_then(|v| Bound::of(v, false));
        let divides = |a: Bound, b: Bound| match (a.exact, b.exact) {
            (Some(a), Some(b)) if a != 0 => b % a == 0,
            _ => a.value == b.value,
        };
        let (o, n) = (step(old), step(new));
        let (narrows, widens) = match (o, n) {
            (None, None) => (false, false),
            (None, Some(_)) => (true, false),
            (Some(_), None) => (false, true),
            (Some(o), Some(n)) => (!divides(n, o), !divides(o, n)),
        };
        let show = |b: Option<Bound>| {
            b.map(|b| Bound::describe(Some(b), true)[3..].to_owned()).unwrap_or("none".into())
        };
        check(self, "multipleOf", narrows, widens, show(o), show(n));
        // uniqueItems.
        let unique = |s: &Value| s.get("uniqueItems") == Some(&Value::Bool(true));
        let (o, n) = (unique(old), unique(new));
        check(self, "uniqueItems", n && !o, o && !n, o.to_string(), n.to_string());
        // pattern: containment of regular expressions is not decided, so any change counts.
        let (o, n) = (old.get("pattern"), new.get("pattern"));
        if o != n {
            let shown = |p: Option<&Value>| p.map(render).unwrap_or_else(|| "none".to_owned());
            let (narrows, widens) = (n.is_some(), o.is_some());
            check(self, "pattern", narrows, widens, shown(o), shown(n));
        }
        // format: only int32 -> int64 and float -> double widen; any other change counts.
        let (o, n) = (old.get("format").and_then(Value::as_str), new.get("format").and_then(Value::as_str));
        if o != n {
            let (narrows, widens) = match (o, n) {
                (Some(o), Some(n)) if format_widens(o, n) => (false, true),
                (Some(o), Some(n)) if format_widens(n, o) => (true, false),
                (None, Some(_)) => (true, false),
                (Some(_), None) => (false, true),
                _ => (true, true),
            };
            check(
                self,
                "format",
                narrows,
                widens,
                o.unwrap_or("none").to_owned(),
                n.unwrap_or("none").to_owned(),
            );
        }
    }

    fn extra(schema: &'a Value, pointer: &str) -> Extra<'a> {
        match schema.get("additionalProperties") {
            None | Some(Value::Bool(true)) => Extra::Any,
            Some(Value::Bool(false)) => Extra::Never,
            Some(other) => Extra::Schema(other, format!("{pointer}/additionalProperties")),
        }
    }

    fn object(
        &mut self,
        at: &At,
        old_pointer: &str,
        old: &'a Value,
        new_pointer: &str,
        new: &'a Value,
        direction: Direction,
    ) {
        let old_props = old.get("properties").and_then(Value::as_object).unwrap_or(&EMPTY);
        let new_props = new.get("properties").and_then(Value::as_object).unwrap_or(&EMPTY);
        let required = |s: &Value| -> BTreeSet<String> {
            s.get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let (old_required, new_required) = (required(old), required(new));
        let (old_extra, new_extra) = (Self::extra(old, old_pointer), Self::extra(new, new_pointer));
        let objecty = |s: &Value, props: &Map<String, Value>| {
            !props.is_empty()
                || s.get("additionalProperties").is_some()
                || s.get("required").is_some()
                || types(s).is_some_and(|t| t.contains("object"))
        };
        if !objecty(old, old_props) && !objecty(new, new_props) {
            return;
        }
        let names: BTreeSet<&String> = old_props.keys().chain(new_props.keys()).collect();
        for name in names {
            let at_prop = at.child(name);
            let old_prop_pointer = pointer_child(&format!("{old_pointer}/properties"), name);
            let new_prop_pointer = pointer_child(&format!("{new_pointer}/properties"), name);
            match (old_props.get(name), new_props.get(name), direction) {
                (Some(o), Some(n), _) => {
                    self.schema(&at_prop, o, &old_prop_pointer, n, &new_prop_pointer, direction)
                }
                (Some(o), None, Direction::Request) => match &new_extra {
                    Extra::Never => self.report(
                        &at_prop,
                        &old_prop_pointer,
                        "property removed from a closed request object: requests that send it are refused",
                    ),
                    Extra::Any => {}
                    Extra::Schema(n, p) => {
                        let p = p.clone();
                        self.schema(&at_prop, o, &old_prop_pointer, n, &p, direction)
                    }
                },
                (Some(_), None, Direction::Response) => {
                    self.report(&at_prop, &old_prop_pointer, "property removed from the response");
                }
                (None, Some(n), Direction::Request) => match &old_extra {
                    Extra::Never => {}
                    Extra::Any => self.schema(&at_prop, &ANY, old_pointer, n, &new_prop_pointer, direction),
                    Extra::Schema(o, p) => {
                        let p = p.clone();
                        self.schema(&at_prop, o, &p, n, &new_prop_pointer, direction)
                    }
                },
                (None, Some(n), Direction::Response) => match &old_extra {
                    Extra::Never => self.report(
                        &at_prop,
                        old_pointer,
                        "new property in a response object the released document closed",
                    ),
                    Extra::Any => {}
                    Extra::Schema(o, p) => {
                        let p = p.clone();
                        self.schema(&at_prop, o, &p, n, &new_prop_pointer, direction)
                    }
                },
                (None, None, _) => {}
            }
        }
        match direction {
            Direction::Request => {
                for name in new_required.difference(&old_required) {
                    let message = if old_props.contains_key(name) {
                        "optional request property is now required"
                    } else {
                        "new required request property"
                    };
                    self.report(&at.child(name), old_pointer, message);
                }
            }
            Direction::Response => {
                for name in old_required.difference(&new_required) {
                    if new_props.contains_key(name) || !old_props.contains_key(name) {
                        self.report(&at.child(name), old_pointer, "response property may now be absent");
                    }
                }
            }
        }
        let at_extra = at.child("*additional*");
        match (&old_extra, &new_extra, direction) {
            (Extra::Never, Extra::Never, _) | (Extra::Any, Extra::Any, _) => {}
            (Extra::Never, _, Direction::Request) | (_, Extra::Never, Direction::Response) => {}
            (_, Extra::Never, Direction::Request) => self.report(
                at,
                old_pointer,
                "object closed (additionalProperties: false): requests with other properties are refused",
            ),
            (Extra::Never, _, Direction::Response) => self.report(
                at,
                old_pointer,
                "object opened: responses may carry properties the released document forbade",
            ),
            (Extra::Any, Extra::Schema(n, p), _) => {
                let p = p.clone();
                self.schema(&at_extra, &ANY, old_pointer, n, &p, direction)
            }
            (Extra::Schema(o, p), Extra::Any, _) => {
                let p = p.clone();
                self.schema(&at_extra, o, &p, &ANY, new_pointer, direction)
            }
            (Extra::Schema(o, op), Extra::Schema(n, np), _) => {
                let (op, np) = (op.clone(), np.clone());
                self.schema(&at_extra, o, &op, n, &np, direction)
            }
        }
    }

    fn array(
        &mut self,
        at: &At,
        old_pointer: &str,
        old: &'a Value,
        new_pointer: &str,
        new: &'a Value,
        direction: Direction,
    ) {
        let (o, n) = (old.get("items"), new.get("items"));
        if o.is_none() && n.is_none() {
            return;
        }
        self.schema(
            &at.child("*"),
            o.unwrap_or(&ANY),
            &format!("{old_pointer}/items"),
            n.unwrap_or(&ANY),
            &format!("{new_pointer}/items"),
            direction,
        );
    }
}
