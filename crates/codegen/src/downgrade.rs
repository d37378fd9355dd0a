//! Derives the OpenAPI 3.0.3 rendition of the OpenAPI 3.1 contract.
//!
//! `openapi/openapi.yaml` is written in OpenAPI 3.1, whose Schema Object is JSON Schema
//! 2020-12. Generators that only read 3.0 get `/openapi-3.0.json`, which the build derives
//! with [`downgrade_to_30`]; it is never edited by hand. Both renditions must reject
//! exactly the same requests, so every rewrite below is an exact equivalent. Where 3.0.3
//! has no equivalent and leaving a keyword out would let the 3.0 rendition accept
//! something the 3.1 document rejects, the function panics with the JSON pointer of the
//! keyword, so the build fails instead of serving a contract that silently diverges.
//! Keywords that are pure annotations in 3.1 (they never reject anything) are dropped.
//!
//! # Document-level rewrites
//!
//! - `openapi: 3.1.x` becomes `3.0.3`; any other version panics.
//! - `jsonSchemaDialect` and `webhooks` are dropped (webhooks are requests this service
//!   sends, not ones it receives), as are `info.summary` and `license.identifier` (the
//!   license `url` stays).
//! - A Path Item whose `$ref` names `#/components/pathItems/…` is replaced by the
//!   referenced Path Item (following chains), its own sibling fields overriding the
//!   referenced ones; `components.pathItems` is then dropped. Other Path Item `$ref`s are
//!   legal 3.0 and kept.
//! - A non-schema Reference Object (parameter, response, request body, header, example,
//!   link, callback, security scheme) keeps only `$ref`: 3.1 allows `summary` and
//!   `description` beside it, 3.0 does not, and they are annotations.
//! - `paths` is added (empty) when absent, and an operation without `responses` gets
//!   `responses: {default: {description: …}}`: both are required in 3.0 and neither
//!   affects which requests are accepted.
//! - A `mutualTLS` security scheme panics: 3.0 has no such scheme type.
//! - Security requirements of schemes other than `oauth2`/`openIdConnect` lose their role
//!   names (`bearerAuth: [platform-admin]` becomes `bearerAuth: []`): 3.1 allows roles
//!   there, 3.0 requires an empty list. Who may call stays the server's rule.
//!
//! # Schema rewrites
//!
//! Only Schema Objects are rewritten: `components.schemas` and every `schema` under
//! parameters, headers and media types (request bodies, responses, callbacks), recursively
//! through `properties`, `items`, `prefixItems`, `additionalProperties`, `allOf`, `anyOf`,
//! `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`, `contains`, `propertyNames`,
//! `unevaluated*`, `$defs` and so on. The `examples` maps of Media Type, Parameter and
//! Header Objects are legal 3.0 and left alone, as are `example`, `default` and `enum`
//! values. Each schema is rewritten bottom-up (subschemas first):
//!
//! - Boolean schemas: `true` becomes `{}` and `false` becomes `{not: {}}` (except as the
//!   value of `additionalProperties`, where 3.0 allows booleans).
//! - `nullable` found in the 3.1 document is dropped first: 3.1 ignores it, so it must not
//!   gain a meaning in 3.0.
//! - `type: [X, "null"]` becomes `type: X, nullable: true`. `type: "null"` alone becomes
//!   `type: string, nullable: true, enum: [null]` (an existing `enum` is narrowed to its
//!   `null` member): it accepts `null` and rejects every string, whichever way a 3.0
//!   validator reads `nullable` next to `enum`. Several non-null types become
//!   `anyOf: [{type: X, nullable: true}, {type: Y}, …]` (nullable only when `"null"` was
//!   listed), the other keywords staying beside the `anyOf`; an existing `anyOf` is kept
//!   and the new one goes into `allOf`. This applies wherever a schema sits, `items`
//!   included.
//! - `const: v` becomes `enum: [v]`; beside an existing `enum`, the enum is narrowed to
//!   the members equal to `v` (JSON equality, so `1` equals `1.0`).
//! - An empty `enum` (nothing is valid) becomes `allOf: [{not: {}}]`, since 3.0 requires
//!   at least one member; an empty `required` is dropped.
//! - `examples: [a, …]` becomes `example: a` unless an `example` is already there.
//! - Numeric `exclusiveMinimum: n` becomes `minimum: n, exclusiveMinimum: true`, and
//!   `exclusiveMaximum: n` likewise; beside an existing `minimum`/`maximum` the stricter
//!   bound wins (an inclusive bound strictly beyond `n` is kept alone; otherwise the
//!   exclusive `n`). A boolean `exclusiveMinimum` is not 2020-12 and panics.
//! - `$ref` with sibling keywords becomes the siblings plus `allOf: [{$ref}]` (3.0 ignores
//!   siblings of `$ref`, 3.1 applies them). A new `allOf` gets the `$ref` first; an existing
//!   one gets it appended, so pointers into it stay valid.
//! - `contentEncoding: base64` becomes `format: byte`; `contentMediaType` of a non-text
//!   type (anything but `text/*`, JSON and XML) without `contentEncoding` becomes
//!   `format: binary`; neither overrides an existing `format`, and only on a string (or
//!   untyped) schema. `contentEncoding`, `contentMediaType` and `contentSchema` are then
//!   dropped (2020-12 annotations).
//! - `dependentRequired: {a: [b, c]}` becomes an `allOf` member
//!   `anyOf: [{not: {type: object, required: [a]}}, {required: [b, c]}]`, and
//!   `dependentSchemas: {a: S}` becomes `anyOf: [{not: {type: object, required: [a]}}, S]`.
//! - `if: I, then: T, else: E` becomes an `allOf` member
//!   `anyOf: [{allOf: [I, T]}, {allOf: [{not: I}, E]}]` (`anyOf: [I, E]` without `then`,
//!   `anyOf: [{not: I}, T]` without `else`); `then`/`else` without `if`, and `if` alone,
//!   are dropped (no effect in 2020-12).
//! - `unevaluatedProperties: U` on a schema without in-place applicators (`$ref`, `allOf`,
//!   `anyOf`, `oneOf`, `if`, `dependentSchemas`) is dropped when `additionalProperties` is
//!   present (everything is evaluated already) and becomes `additionalProperties: U`
//!   otherwise; `unevaluatedItems: U` likewise becomes `items: U` or is dropped beside
//!   `items`. A trivial (`true`/`{}`) one is dropped. Beside an applicator it panics.
//! - `contains: {}` (or `true`) becomes `minItems` (`minContains`, default 1) and
//!   `maxItems` (`maxContains`); `contains` with `minContains: 0` and no `maxContains` is
//!   dropped; any other `contains` panics. `minContains`/`maxContains` without `contains`
//!   are dropped (ignored by 2020-12).
//! - `propertyNames: false` becomes `maxProperties: 0`; a trivial one is dropped; any other
//!   panics.
//! - `patternProperties` is dropped when empty, or when all its schemas are trivial and
//!   there is no `additionalProperties`; otherwise it panics (it also changes what
//!   `additionalProperties` sees).
//! - `prefixItems` is dropped when all its schemas are trivial and `items` is absent or
//!   trivial; otherwise it panics (3.0 has no tuple validation). Array-form `items` is not
//!   2020-12 and panics.
//! - `type: array` without `items` gets `items: {}` (3.0 requires `items`).
//! - `$defs` (and draft-07 `definitions`) entries are moved to `components.schemas` under
//!   a generated name: the owner's path with `_` between segments (e.g.
//!   `Foo/$defs/bar` → `Foo_bar`), made unique with `_2`, `_3`, … Every schema `$ref` (and
//!   `discriminator.mapping` value) into a moved entry is rewritten; moving rather than
//!   inlining keeps recursive definitions working.
//! - `$ref: "#name"` naming an `$anchor` (or `$dynamicAnchor`) is rewritten to the JSON
//!   pointer of that schema.
//! - `$id` is dropped when no `$ref` depends on it; a `$ref` inside a schema resource with
//!   `$id`, or a `$ref` naming an `$id`, panics (dropping `$id` would change where it
//!   resolves). `$dynamicRef` and `$recursiveRef` panic.
//! - Annotations and unknown keywords that 3.0 lacks (`$schema`, `$anchor`,
//!   `$dynamicAnchor`, `$vocabulary`, `$comment`, `additionalItems`, …) are dropped; `x-`
//!   extensions, `format` (any value) and all 3.0 keywords are kept.
//!
//! Finally every local `$ref` (and discriminator mapping) of the result must resolve
//! inside the result, or the function panics (for example a `$ref` into `webhooks`, into
//! `components.pathItems`, or into an `if` that was rewritten).
//!
//! # Limits
//!
//! - `nullable` is read as OpenAPI 3.0.3 defines it: it adds `null` only where `type` is
//!   given, and `enum` still applies to `null`. An untyped schema accepts `null` in both
//!   renditions (an untyped `enum: [1, null]` is kept as it is).
//! - `format`, `contentEncoding` and `contentMediaType` are annotations in 2020-12; a 3.0
//!   validator that asserts `format: byte`/`binary` may reject more than a 3.1 one that
//!   ignores content keywords.
//! - Keywords 3.0 cannot express panic rather than approximate; see above for which.

use serde_json::{Map, Number, Value, json};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// Returns the OpenAPI 3.0.3 rendition of an OpenAPI 3.1 document, leaving `doc` as it
/// is.
///
/// The result accepts and rejects exactly the requests `doc` does; the module
/// documentation lists each rewrite.
///
/// # Panics
///
/// When `doc` is not an OpenAPI 3.1.x document, or uses a construct that OpenAPI 3.0.3
/// cannot express without accepting something `doc` rejects (for example non-trivial
/// `prefixItems`, `patternProperties`, `propertyNames` or `contains`, `unevaluated*` beside
/// an applicator, `$dynamicRef`, a `$ref` that depends on `$id`, a `mutualTLS` security
/// scheme, or a `$ref` left dangling). The message names the JSON pointer of the offending
/// keyword.
pub fn downgrade_to_30(doc: &Value) -> Value {
    let mut out = doc.clone();
    let root = match out.as_object_mut() {
        Some(root) => root,
        None => fail("", "the document is not a JSON object"),
    };
    match root.get("openapi").and_then(Value::as_str) {
        Some(v) if v.starts_with("3.1.") => {}
        other => fail("/openapi", &format!("expected an OpenAPI 3.1.x document, found {other:?}")),
    }
    root.insert("openapi".into(), Value::from("3.0.3"));
    take(root, "jsonSchemaDialect");
    take(root, "webhooks");
    if let Some(Value::Object(info)) = root.get_mut("info") {
        take(info, "summary");
        if let Some(Value::Object(license)) = info.get_mut("license") {
            take(license, "identifier");
        }
    }
    if !root.contains_key("paths") {
        root.insert("paths".into(), json!({}));
    }
    let path_items = match root.get_mut("components") {
        Some(Value::Object(c)) => take(c, "pathItems"),
        _ => None,
    };
    let lookup = json!({ "components": { "pathItems": path_items.unwrap_or_else(|| json!({})) } });

    Walk { schema: &mut |_, _| {}, fix: Some(&lookup) }.document(root);
    strip_role_names(root);
    downgrade_schemas(root);
    check_refs(&out);
    out
}

/// Empties the scope lists of security requirements whose scheme is neither `oauth2` nor
/// `openIdConnect`: 3.1 lets them name roles (`bearerAuth: [platform-admin]`), 3.0 requires
/// them empty. The roles are the server's to enforce; a client sends the same token.
fn strip_role_names(root: &mut Map<String, Value>) {
    let scoped: Vec<String> = root
        .get("components")
        .and_then(|c| c.get("securitySchemes"))
        .and_then(Value::as_object)
        .map(|schemes| {
            schemes
                .iter()
                .filter(|(_, s)| {
                    matches!(s.get("type").and_then(Value::as_str), Some("oauth2" | "openIdConnect"))
                })
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default();
    let strip = |security: Option<&mut Value>| {
        for requirement in security.and_then(Value::as_array_mut).into_iter().flatten() {
            for (scheme, roles) in requirement.as_object_mut().into_iter().flatten() {
                if !scoped.contains(scheme) {
                    *roles = json!([]);
                }
            }
        }
    };
    strip(root.get_mut("security"));
    for item in root.get_mut("paths").and_then(Value::as_object_mut).into_iter().flat_map(|p| p.values_mut())
    {
        for method in METHODS {
            strip(item.get_mut(method).and_then(|op| op.get_mut("security")));
        }
    }
}

/// Panics with the module's message format: what went wrong and where.
fn fail(ptr: &str, msg: &str) -> ! {
    panic!("downgrade_to_30: cannot derive OpenAPI 3.0.3 at #{ptr}: {msg}")
}

// ---------------------------------------------------------------------------------------
// Walking the document to its Schema Objects
// ---------------------------------------------------------------------------------------

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Visits every Schema Object root of a document (and, on the structural pass, applies
/// the non-schema fixes: path item inlining, Reference Object siblings, responses,
/// security schemes).
struct Walk<'a> {
    schema: &'a mut dyn FnMut(&mut Value, &str),
    /// `Some` on the structural pass: a document holding the removed `components.pathItems`.
    fix: Option<&'a Value>,
}

impl Walk<'_> {
    fn document(&mut self, doc: &mut Map<String, Value>) {
        if let Some(Value::Object(paths)) = doc.get_mut("paths") {
            for (k, item) in paths.iter_mut() {
                if !k.starts_with("x-") {
                    self.path_item(item, &format!("/paths/{}", esc(k)));
                }
            }
        }
        let Some(Value::Object(c)) = doc.get_mut("components") else {
            return;
        };
        if let Some(Value::Object(schemas)) = c.get_mut("schemas") {
            for (k, s) in schemas.iter_mut() {
                (self.schema)(s, &format!("/components/schemas/{}", esc(k)));
            }
        }
        self.each(c, "parameters", "/components", Self::parameter);
        self.each(c, "headers", "/components", Self::parameter);
        self.each(c, "requestBodies", "/components", Self::request_body);
        self.each(c, "responses", "/components", Self::response);
        self.each(c, "callbacks", "/components", Self::callback);
        self.each(c, "examples", "/components", Self::plain);
        self.each(c, "links", "/components", Self::plain);
        self.each(c, "securitySchemes", "/components", Self::security_scheme);
    }

    /// Calls `f` on each entry of the map `m[key]` (skipping `x-` extensions).
    fn each(
        &mut self,
        m: &mut Map<String, Value>,
        key: &str,
        base: &str,
        f: fn(&mut Self, &mut Value, &str),
    ) {
        if let Some(Value::Object(entries)) = m.get_mut(key) {
            for (k, v) in entries.iter_mut() {
                if !k.starts_with("x-") {
                    f(self, v, &format!("{base}/{}/{}", esc(key), esc(k)));
                }
            }
        }
    }

    /// Strips Reference Object siblings on the structural pass; true if `v` is a reference.
    fn reference(&mut self, v: &mut Value) -> bool {
        let Value::Object(m) = v else { return false };
        if !m.contains_key("$ref") {
            return false;
        }
        if self.fix.is_some() {
            m.retain(|k, _| k == "$ref");
        }
        true
    }

    fn plain(&mut self, v: &mut Value, _ptr: &str) {
        self.reference(v);
    }

    fn security_scheme(&mut self, v: &mut Value, ptr: &str) {
        if !self.reference(v)
            && self.fix.is_some()
            && v.get("type").and_then(Value::as_str) == Some("mutualTLS")
        {
            fail(&format!("{ptr}/type"), "OpenAPI 3.0 has no mutualTLS security scheme");
        }
    }

    fn path_item(&mut self, v: &mut Value, ptr: &str) {
        if let Some(lookup) = self.fix {
            inline_path_item(v, ptr, lookup);
        }
        let Value::Object(m) = v else { return };
        self.parameters(m, ptr);
        for method in METHODS {
            if let Some(op) = m.get_mut(method) {
                self.operation(op, &format!("{ptr}/{method}"));
            }
        }
    }

    fn parameters(&mut self, m: &mut Map<String, Value>, ptr: &str) {
        if let Some(Value::Array(params)) = m.get_mut("parameters") {
            for (i, p) in params.iter_mut().enumerate() {
                self.parameter(p, &format!("{ptr}/parameters/{i}"));
            }
        }
    }

    fn operation(&mut self, v: &mut Value, ptr: &str) {
        let Value::Object(m) = v else { return };
        self.parameters(m, ptr);
        if let Some(body) = m.get_mut("requestBody") {
            self.request_body(body, &format!("{ptr}/requestBody"));
        }
        if self.fix.is_some() && m.get("responses").and_then(Value::as_object).is_none_or(Map::is_empty) {
            m.insert("responses".into(), json!({ "default": { "description": "Not specified." } }));
        }
        self.each(m, "responses", ptr, Self::response);
        self.each(m, "callbacks", ptr, Self::callback);
    }

    /// A Parameter or Header Object.
    fn parameter(&mut self, v: &mut Value, ptr: &str) {
        if self.reference(v) {
            return;
        }
        let Value::Object(m) = v else { return };
        if let Some(s) = m.get_mut("schema") {
            (self.schema)(s, &format!("{ptr}/schema"));
        }
        self.each(m, "content", ptr, Self::media_type);
        self.each(m, "examples", ptr, Self::plain);
    }

    fn request_body(&mut self, v: &mut Value, ptr: &str) {
        if self.reference(v) {
            return;
        }
        if let Value::Object(m) = v {
            self.each(m, "content", ptr, Self::media_type);
        }
    }

    fn response(&mut self, v: &mut Value, ptr: &str) {
        if self.reference(v) {
            return;
        }
        if let Value::Object(m) = v {
            self.each(m, "headers", ptr, Self::parameter);
            self.each(m, "content", ptr, Self::media_type);
            self.each(m, "links", ptr, Self::plain);
        }
    }

    fn media_type(&mut self, v: &mut Value, ptr: &str) {
        let Value::Object(m) = v else { return };
        if let Some(s) = m.get_mut("schema") {
            (self.schema)(s, &format!("{ptr}/schema"));
        }
        self.each(m, "examples", ptr, Self::plain);
        if let Some(Value::Object(encodings)) = m.get_mut("encoding") {
            for (k, e) in encodings.iter_mut() {
                if let Value::Object(e) = e {
                    self.each(e, "headers", &format!("{ptr}/encoding/{}", esc(k)), Self::parameter);
                }
            }
        }
    }

    fn callback(&mut self, v: &mut Value, ptr: &str) {
        if self.reference(v) {
            return;
        }
        if let Value::Object(m) = v {
            for (expr, item) in m.iter_mut() {
                if !expr.starts_with("x-") {
                    self.path_item(item, &format!("{ptr}/{}", esc(expr)));
                }
            }
        }
    }
}

/// Calls `f` on every Schema Object root of `doc` with its JSON pointer.
fn visit_schemas(doc: &mut Map<String, Value>, f: &mut dyn FnMut(&mut Value, &str)) {
    Walk { schema: f, fix: None }.document(doc);
}

/// Replaces a Path Item `$ref` into `components.pathItems` by the referenced Path Item,
/// its own sibling fields winning.
fn inline_path_item(v: &mut Value, ptr: &str, lookup: &Value) {
    for _ in 0..64 {
        let Some(r) = v.get("$ref").and_then(Value::as_str) else {
            return;
        };
        if !r.starts_with("#/components/pathItems/") {
            return;
        }
        let Some(Value::Object(target)) = lookup.pointer(&percent_decode(&r[1..])) else {
            fail(ptr, &format!("path item $ref {r:?} does not resolve"))
        };
        let mut merged = target.clone();
        if let Value::Object(local) = v {
            for (k, val) in local.iter() {
                if k != "$ref" {
                    merged.insert(k.clone(), val.clone());
                }
            }
        }
        *v = Value::Object(merged);
    }
    fail(ptr, "path item $ref chain is cyclic")
}

// ---------------------------------------------------------------------------------------
// Schema pipeline
// ---------------------------------------------------------------------------------------

/// Keywords whose value is one subschema.
const SINGLE: [&str; 12] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
    "additionalItems",
];
/// Keywords whose value is an array of subschemas.
const ARRAYS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value is a map of subschemas.
const MAPS: [&str; 5] = ["properties", "patternProperties", "dependentSchemas", "$defs", "definitions"];

/// Calls `f(keyword, subschema, pointer)` on every direct subschema of a schema object.
fn for_each_child(m: &mut Map<String, Value>, ptr: &str, f: &mut dyn FnMut(&str, &mut Value, &str)) {
    for (k, v) in m.iter_mut() {
        let kp = format!("{ptr}/{}", esc(k));
        let k = k.as_str();
        if SINGLE.contains(&k) {
            if k == "items" && v.is_array() {
                fail(&kp, "array-form items is not JSON Schema 2020-12 (use prefixItems)");
            }
            f(k, v, &kp);
        } else if ARRAYS.contains(&k) {
            if let Value::Array(a) = v {
                for (i, s) in a.iter_mut().enumerate() {
                    f(k, s, &format!("{kp}/{i}"));
                }
            }
        } else if MAPS.contains(&k)
            && let Value::Object(entries) = v
        {
            for (name, s) in entries.iter_mut() {
                f(k, s, &format!("{kp}/{}", esc(name)));
            }
        }
    }
}

/// What the first pass learns about the schemas: `$defs` entries, anchors, `$id`s, `$ref`s.
#[derive(Default)]
struct Index {
    defs: Vec<String>,
    anchors: HashMap<String, String>,
    ids: Vec<(String, String)>,
    refs: Vec<(String, String)>,
}

fn collect(v: &mut Value, ptr: &str, idx: &mut Index) {
    let Value::Object(m) = v else { return };
    if let Some(Value::String(r)) = m.get("$ref") {
        idx.refs.push((ptr.to_owned(), r.clone()));
    }
    if let Some(Value::String(id)) = m.get("$id") {
        idx.ids.push((ptr.to_owned(), id.clone()));
    }
    for key in ["$anchor", "$dynamicAnchor"] {
        if let Some(Value::String(a)) = m.get(key) {
            idx.anchors.insert(a.clone(), ptr.to_owned());
        }
    }
    for_each_child(m, ptr, &mut |k, s, p| {
        if k == "$defs" || k == "definitions" {
            idx.defs.push(p.to_owned());
        }
        collect(s, p, idx);
    });
}

/// Panics where dropping `$id` would change how a `$ref` resolves.
fn check_ids(idx: &Index) {
    for (id_ptr, id) in &idx.ids {
        for (ref_ptr, r) in &idx.refs {
            let inside = ref_ptr == id_ptr || ref_ptr.starts_with(&format!("{id_ptr}/"));
            let names_id = !r.starts_with('#') && (r == id || r.starts_with(&format!("{id}#")));
            if inside || names_id {
                fail(
                    &format!("{id_ptr}/$id"),
                    &format!("$ref {r:?} at #{ref_ptr} resolves against $id {id:?}, which 3.0 does not have"),
                );
            }
        }
    }
}

/// Where moved `$defs` entries go, and the anchors, for rewriting `$ref`s.
struct Relocation {
    names: HashMap<String, String>,
    anchors: HashMap<String, String>,
}

impl Relocation {
    /// The rewritten form of a `$ref`, or `None` to keep it as it is.
    fn rewrite(&self, r: &str, at: &str) -> Option<String> {
        let frag = r.strip_prefix('#')?;
        let (ptr, anchored) = if frag.is_empty() || frag.starts_with('/') {
            (percent_decode(frag), false)
        } else {
            match self.anchors.get(&percent_decode(frag)) {
                Some(p) => (p.clone(), true),
                None => fail(at, &format!("$ref {r:?} names an unknown anchor")),
            }
        };
        let best = self
            .names
            .iter()
            .filter(|(def, _)| ptr == **def || ptr.starts_with(&format!("{def}/")))
            .max_by_key(|(def, _)| def.len());
        match best {
            Some((def, name)) => Some(format!(
                "#{}",
                fragment_encode(&format!("/components/schemas/{}{}", esc(name), &ptr[def.len()..]))
            )),
            None if anchored => Some(format!("#{}", fragment_encode(&ptr))),
            None => None,
        }
    }
}

/// Rewrites `$ref`s and moves `$defs` entries out of the schema into `moved`.
fn relocate(v: &mut Value, ptr: &str, reloc: &Relocation, moved: &mut Vec<(String, Value)>) {
    let Value::Object(m) = v else { return };
    if let Some(Value::String(r)) = m.get_mut("$ref")
        && let Some(new) = reloc.rewrite(r, ptr)
    {
        *r = new;
    }
    if let Some(Value::Object(mapping)) = m.get_mut("discriminator").and_then(|d| d.get_mut("mapping")) {
        for target in mapping.values_mut() {
            if let Value::String(r) = target
                && let Some(new) = reloc.rewrite(r, ptr)
            {
                *r = new;
            }
        }
    }
    for key in ["$defs", "definitions"] {
        match take(m, key) {
            None => {}
            Some(Value::Object(defs)) => {
                for (name, mut s) in defs {
                    let p = format!("{ptr}/{}/{}", esc(key), esc(&name));
                    relocate(&mut s, &p, reloc, moved);
                    moved.push((reloc.names[&p].clone(), s));
                }
            }
            Some(_) if key == "definitions" => {}
            Some(_) => fail(&format!("{ptr}/$defs"), "$defs must be an object"),
        }
    }
    for_each_child(m, ptr, &mut |_, s, p| relocate(s, p, reloc, moved));
}

/// The `components.schemas` name for the `$defs` entry at `ptr`.
fn def_name(ptr: &str, taken: &mut HashSet<String>) -> String {
    let segs: Vec<String> = ptr.split('/').skip(1).map(unesc).collect();
    let segs = match segs.as_slice() {
        [a, b, rest @ ..] if a == "components" && b == "schemas" => rest.to_vec(),
        _ => segs,
    };
    let base: String = segs
        .iter()
        .filter(|s| *s != "$defs" && *s != "definitions")
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("_")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || ".-_".contains(c) { c } else { '_' })
        .collect();
    let base = if base.is_empty() { "Def".to_owned() } else { base };
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// Runs the schema passes: index, relocate `$defs`, rewrite every schema.
fn downgrade_schemas(doc: &mut Map<String, Value>) {
    let mut idx = Index::default();
    visit_schemas(doc, &mut |s, p| collect(s, p, &mut idx));
    check_ids(&idx);

    let mut taken: HashSet<String> = match doc.get("components").and_then(|c| c.get("schemas")) {
        Some(Value::Object(s)) => s.keys().cloned().collect(),
        _ => HashSet::new(),
    };
    let names = idx.defs.iter().map(|p| (p.clone(), def_name(p, &mut taken))).collect();
    let reloc = Relocation { names, anchors: idx.anchors };
    let mut moved = Vec::new();
    visit_schemas(doc, &mut |s, p| relocate(s, p, &reloc, &mut moved));
    if !moved.is_empty() {
        let components = doc.entry("components").or_insert_with(|| json!({}));
        let schemas = match components {
            Value::Object(c) => c.entry("schemas").or_insert_with(|| json!({})),
            _ => fail("/components", "components must be an object"),
        };
        if let Value::Object(schemas) = schemas {
            schemas.extend(moved);
        }
    }

    visit_schemas(doc, &mut |s, p| convert(s, p));
}

/// Rewrites one schema (boolean or object) and its subschemas into 3.0 form.
fn convert(v: &mut Value, ptr: &str) {
    match v {
        Value::Bool(true) => *v = json!({}),
        Value::Bool(false) => *v = json!({ "not": {} }),
        Value::Object(m) => {
            for_each_child(m, ptr, &mut |k, s, p| {
                let keeps_bool = k == "additionalProperties" || k == "unevaluatedProperties";
                if !(keeps_bool && s.is_boolean()) {
                    convert(s, p);
                }
            });
            convert_node(m, ptr);
        }
        _ => fail(ptr, "a schema must be an object or a boolean"),
    }
}

/// The 2020-12 keywords that assert something and that 3.0 lacks; `convert_node` must have
/// rewritten or refused each of them.
const UNEXPRESSED: [&str; 16] = [
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "patternProperties",
    "dependentSchemas",
    "dependentRequired",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "const",
    "$dynamicRef",
    "$recursiveRef",
];

/// The keywords of an OpenAPI 3.0.3 Schema Object (besides `$ref` and `x-` extensions).
const OAS30: [&str; 33] = [
    "title",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxProperties",
    "minProperties",
    "required",
    "enum",
    "type",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "items",
    "properties",
    "additionalProperties",
    "description",
    "format",
    "default",
    "nullable",
    "discriminator",
    "readOnly",
    "writeOnly",
    "xml",
    "externalDocs",
];
/// More 3.0.3 Schema Object keywords.
const OAS30_MORE: [&str; 2] = ["example", "deprecated"];

/// Rewrites the keywords of one schema object whose subschemas are already rewritten.
fn convert_node(m: &mut Map<String, Value>, ptr: &str) {
    let had_all_of = m.contains_key("allOf");
    take(m, "nullable");
    for k in ["$dynamicRef", "$recursiveRef"] {
        if m.contains_key(k) {
            fail(&format!("{ptr}/{}", esc(k)), "dynamic references have no 3.0 equivalent");
        }
    }
    for k in ["$schema", "$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary", "$comment"] {
        take(m, k);
    }
    unevaluated(m, ptr);
    prefix_items(m, ptr);
    contains(m, ptr);
    property_names(m, ptr);
    pattern_properties(m, ptr);
    bound(m, ptr, "minimum", "exclusiveMinimum", Ordering::Greater);
    bound(m, ptr, "maximum", "exclusiveMaximum", Ordering::Less);
    constant(m, ptr);
    types(m, ptr);
    empty_enum(m, ptr);
    examples(m);
    content(m);
    dependent_required(m, ptr);
    dependent_schemas(m, ptr);
    if_then_else(m, ptr);
    if m.get("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        take(m, "required");
    }
    if m.get("type").and_then(Value::as_str) == Some("array") && !m.contains_key("items") {
        m.insert("items".into(), json!({}));
    }
    for k in UNEXPRESSED {
        assert!(!m.contains_key(k), "downgrade_to_30: internal error: {k} left at #{ptr}");
    }
    m.retain(|k, _| {
        k == "$ref" || k.starts_with("x-") || OAS30.contains(&k.as_str()) || OAS30_MORE.contains(&k.as_str())
    });
    if m.contains_key("$ref") && m.len() > 1 {
        let r = take(m, "$ref").unwrap_or(Value::Null);
        let r = json!({ "$ref": r });
        if had_all_of {
            push_all_of(m, r, ptr);
        } else if let Some(Value::Array(all)) = m.get_mut("allOf") {
            all.insert(0, r);
        } else {
            m.insert("allOf".into(), json!([r]));
        }
    }
}

/// `unevaluatedProperties` / `unevaluatedItems` where no in-place applicator is involved.
fn unevaluated(m: &mut Map<String, Value>, ptr: &str) {
    let applicators =
        ["$ref", "allOf", "anyOf", "oneOf", "if", "dependentSchemas"].iter().any(|k| m.contains_key(*k));
    if let Some(u) = take(m, "unevaluatedProperties")
        && !trivially_true(&u)
    {
        if applicators {
            fail(
                &format!("{ptr}/unevaluatedProperties"),
                "unevaluatedProperties beside $ref/allOf/anyOf/oneOf/if/dependentSchemas has no 3.0 equivalent",
            );
        }
        if !m.contains_key("additionalProperties") {
            let u = if is_false(&u) { Value::Bool(false) } else { u };
            m.insert("additionalProperties".into(), u);
        }
    }
    if let Some(u) = take(m, "unevaluatedItems")
        && !trivially_true(&u)
    {
        if applicators || m.contains_key("contains") {
            fail(
                &format!("{ptr}/unevaluatedItems"),
                "unevaluatedItems beside $ref/allOf/anyOf/oneOf/if/dependentSchemas/contains has no 3.0 equivalent",
            );
        }
        if !m.contains_key("items") {
            m.insert("items".into(), u);
        }
    }
}

fn prefix_items(m: &mut Map<String, Value>, ptr: &str) {
    let Some(p) = take(m, "prefixItems") else {
        return;
    };
    let trivial = p.as_array().is_some_and(|a| a.iter().all(trivially_true))
        && m.get("items").is_none_or(trivially_true);
    if !trivial {
        fail(&format!("{ptr}/prefixItems"), "3.0 has no tuple validation (prefixItems)");
    }
}

fn contains(m: &mut Map<String, Value>, ptr: &str) {
    let count = |m: &mut Map<String, Value>, k: &str| match take(m, k) {
        None => None,
        Some(v) => match v.as_u64() {
            Some(n) => Some(n),
            None => fail(&format!("{ptr}/{k}"), "expected a non-negative integer"),
        },
    };
    let min = count(m, "minContains");
    let max = count(m, "maxContains");
    let Some(c) = take(m, "contains") else {
        return;
    };
    let min = min.unwrap_or(1);
    if trivially_true(&c) {
        if min > 0 {
            tighten(m, "minItems", min, Ordering::Greater);
        }
        if let Some(max) = max {
            tighten(m, "maxItems", max, Ordering::Less);
        }
    } else if !(min == 0 && max.is_none()) {
        fail(&format!("{ptr}/contains"), "3.0 has no contains");
    }
}

/// Sets the count keyword `k` to `n` unless the existing value is already stricter.
fn tighten(m: &mut Map<String, Value>, k: &str, n: u64, stricter: Ordering) {
    let keep = m.get(k).and_then(Value::as_u64).is_some_and(|old| old == n || old.cmp(&n) == stricter);
    if !keep {
        m.insert(k.into(), Value::from(n));
    }
}

fn property_names(m: &mut Map<String, Value>, ptr: &str) {
    let Some(p) = take(m, "propertyNames") else {
        return;
    };
    if is_false(&p) {
        tighten(m, "maxProperties", 0, Ordering::Less);
    } else if !trivially_true(&p) {
        fail(&format!("{ptr}/propertyNames"), "3.0 has no propertyNames");
    }
}

fn pattern_properties(m: &mut Map<String, Value>, ptr: &str) {
    let Some(p) = take(m, "patternProperties") else {
        return;
    };
    let harmless = match &p {
        Value::Object(pp) => {
            pp.is_empty() || (pp.values().all(trivially_true) && !m.contains_key("additionalProperties"))
        }
        _ => false,
    };
    if !harmless {
        fail(&format!("{ptr}/patternProperties"), "3.0 has no patternProperties");
    }
}

/// A numeric `exclusiveMinimum`/`exclusiveMaximum` as 3.0's boolean form, keeping the
/// stricter of it and `minimum`/`maximum`.
fn bound(m: &mut Map<String, Value>, ptr: &str, inclusive: &str, exclusive: &str, stricter: Ordering) {
    let Some(ex) = m.get(exclusive) else { return };
    let Value::Number(n) = ex.clone() else {
        fail(&format!("{ptr}/{exclusive}"), "expected a number (JSON Schema 2020-12)")
    };
    match m.get(inclusive) {
        Some(Value::Number(inc)) if num_cmp(inc, &n) == stricter => {
            take(m, exclusive);
        }
        None | Some(Value::Number(_)) => {
            m.insert(inclusive.into(), Value::Number(n));
            m.insert(exclusive.into(), Value::Bool(true));
        }
        Some(_) => fail(&format!("{ptr}/{inclusive}"), "expected a number"),
    }
}

fn constant(m: &mut Map<String, Value>, ptr: &str) {
    let Some(c) = take(m, "const") else {
        return;
    };
    match m.get_mut("enum") {
        None => {
            m.insert("enum".into(), json!([c]));
        }
        Some(Value::Array(e)) => e.retain(|x| json_eq(x, &c)),
        Some(_) => fail(&format!("{ptr}/enum"), "enum must be an array"),
    }
}

const TYPES_30: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

fn types(m: &mut Map<String, Value>, ptr: &str) {
    let tp = format!("{ptr}/type");
    let mut list: Vec<String> = Vec::new();
    match m.get("type") {
        None => return,
        Some(Value::String(t)) => list.push(t.clone()),
        Some(Value::Array(a)) if !a.is_empty() => {
            for t in a {
                let Some(t) = t.as_str() else { fail(&tp, "type members must be strings") };
                if !list.iter().any(|x| x == t) {
                    list.push(t.to_owned());
                }
            }
        }
        Some(_) => fail(&tp, "type must be a string or a non-empty array"),
    }
    let nullable = list.iter().any(|t| t == "null");
    list.retain(|t| t != "null");
    if let Some(bad) = list.iter().find(|t| !TYPES_30.contains(&t.as_str())) {
        fail(&tp, &format!("unknown type {bad:?}"));
    }
    match list.as_slice() {
        [] => {
            replace_entry(
                m,
                "type",
                vec![("type".into(), json!("string")), ("nullable".into(), json!(true))],
            );
            match m.get_mut("enum") {
                None => {
                    m.insert("enum".into(), json!([null]));
                }
                Some(Value::Array(e)) => e.retain(Value::is_null),
                Some(_) => fail(&format!("{ptr}/enum"), "enum must be an array"),
            }
        }
        [t] => {
            let mut entries = vec![("type".to_owned(), json!(t))];
            if nullable {
                entries.push(("nullable".into(), json!(true)));
            }
            replace_entry(m, "type", entries);
        }
        many => {
            let branches: Vec<Value> = many
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let mut b = json!({ "type": t });
                    if nullable && i == 0 {
                        b["nullable"] = json!(true);
                    }
                    if t == "array" {
                        b["items"] = json!({});
                    }
                    b
                })
                .collect();
            if m.contains_key("anyOf") {
                replace_entry(m, "type", vec![]);
                push_all_of(m, json!({ "anyOf": branches }), ptr);
            } else {
                replace_entry(m, "type", vec![("anyOf".into(), Value::Array(branches))]);
            }
        }
    }
}

fn empty_enum(m: &mut Map<String, Value>, ptr: &str) {
    if m.get("enum").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        take(m, "enum");
        push_all_of(m, json!({ "not": {} }), ptr);
    }
}

fn examples(m: &mut Map<String, Value>) {
    let first = match m.get("examples") {
        Some(Value::Array(a)) if !m.contains_key("example") => a.first().cloned(),
        _ => None,
    };
    match first {
        Some(ex) => replace_entry(m, "examples", vec![("example".into(), ex)]),
        None => {
            take(m, "examples");
        }
    }
}

fn content(m: &mut Map<String, Value>) {
    let enc = take(m, "contentEncoding");
    let media = take(m, "contentMediaType");
    take(m, "contentSchema");
    let stringy = m.get("type").is_none_or(|t| t == "string");
    if m.contains_key("format") || !stringy {
        return;
    }
    let format = match (enc.as_ref().and_then(Value::as_str), media.as_ref().and_then(Value::as_str)) {
        (Some(e), _) if e.eq_ignore_ascii_case("base64") => "byte",
        (None, Some(mt)) if is_binary_media(mt) => "binary",
        _ => return,
    };
    m.insert("format".into(), json!(format));
}

/// Whether a media type is not textual (neither `text/*` nor JSON nor XML).
fn is_binary_media(mt: &str) -> bool {
    let mt = mt.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    !(mt.starts_with("text/")
        || mt.ends_with("/json")
        || mt.ends_with("+json")
        || mt.ends_with("/xml")
        || mt.ends_with("+xml")
        || mt == "application/x-www-form-urlencoded")
}

/// `{not: {type: object, required: [name]}}`: true for anything but an object with `name`.
fn lacks(name: &str) -> Value {
    json!({ "not": { "type": "object", "required": [name] } })
}

fn dependent_required(m: &mut Map<String, Value>, ptr: &str) {
    let Some(d) = take(m, "dependentRequired") else {
        return;
    };
    let Value::Object(d) = d else { fail(&format!("{ptr}/dependentRequired"), "must be an object") };
    for (name, deps) in d {
        let Some(deps) = deps.as_array() else {
            fail(&format!("{ptr}/dependentRequired/{}", esc(&name)), "must be an array")
        };
        let mut unique: Vec<&Value> = Vec::new();
        for dep in deps {
            if !unique.contains(&dep) {
                unique.push(dep);
            }
        }
        if !unique.is_empty() {
            push_all_of(m, json!({ "anyOf": [lacks(&name), { "required": unique }] }), ptr);
        }
    }
}

fn dependent_schemas(m: &mut Map<String, Value>, ptr: &str) {
    let Some(d) = take(m, "dependentSchemas") else {
        return;
    };
    let Value::Object(d) = d else { fail(&format!("{ptr}/dependentSchemas"), "must be an object") };
    for (name, s) in d {
        if !trivially_true(&s) {
            push_all_of(m, json!({ "anyOf": [lacks(&name), s] }), ptr);
        }
    }
}

fn if_then_else(m: &mut Map<String, Value>, ptr: &str) {
    let i = take(m, "if");
    let t = take(m, "then").filter(|s| !trivially_true(s));
    let e = take(m, "else").filter(|s| !trivially_true(s));
    let Some(i) = i else { return };
    let rule = match (t, e) {
        (None, None) => return,
        (None, Some(e)) => json!({ "anyOf": [i, e] }),
        (Some(t), None) => json!({ "anyOf": [{ "not": i }, t] }),
        (Some(t), Some(e)) => {
            json!({ "anyOf": [{ "allOf": [i.clone(), t] }, { "allOf": [{ "not": i }, e] }] })
        }
    };
    push_all_of(m, rule, ptr);
}

fn push_all_of(m: &mut Map<String, Value>, s: Value, ptr: &str) {
    match m.get_mut("allOf") {
        Some(Value::Array(all)) => all.push(s),
        None => {
            m.insert("allOf".into(), json!([s]));
        }
        Some(_) => fail(&format!("{ptr}/allOf"), "allOf must be an array"),
    }
}

/// Replaces the entry `key` by `entries` at the same position (the map keeps its order).
fn replace_entry(m: &mut Map<String, Value>, key: &str, entries: Vec<(String, Value)>) {
    let old = std::mem::take(m);
    let mut entries = Some(entries);
    for (k, v) in old {
        if k == key {
            m.extend(entries.take().unwrap_or_default());
        } else {
            m.insert(k, v);
        }
    }
}

/// A schema that accepts everything: `true`, or an object of annotations only.
fn trivially_true(v: &Value) -> bool {
    const ANNOTATIONS: [&str; 9] = [
        "title",
        "description",
        "default",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
    ];
    match v {
        Value::Bool(b) => *b,
        Value::Object(m) => m.keys().all(|k| k.starts_with("x-") || ANNOTATIONS.contains(&k.as_str())),
        _ => false,
    }
}

/// A schema that accepts nothing: `false` or `{not: {}}`.
fn is_false(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !*b,
        Value::Object(m) => m.len() == 1 && m.get("not").is_some_and(trivially_true),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------
// Final check
// ---------------------------------------------------------------------------------------

/// Panics on any local `$ref` (or discriminator mapping) that does not resolve in `doc`.
///
/// Data (`example`, `default`, `enum`, example `value`s, `x-` extensions) is not searched.
fn check_refs(doc: &Value) {
    /// Maps whose keys are names (of properties, components, paths, media types…), so that
    /// a property called `value` or `$ref` is not mistaken for a keyword.
    const NAME_MAPS: [&str; 17] = [
        "properties",
        "patternProperties",
        "dependentSchemas",
        "$defs",
        "definitions",
        "paths",
        "schemas",
        "responses",
        "parameters",
        "headers",
        "requestBodies",
        "securitySchemes",
        "links",
        "callbacks",
        "pathItems",
        "content",
        "encoding",
    ];
    fn walk(v: &Value, ptr: &str, doc: &Value, names: bool) {
        match v {
            Value::Object(m) if names => {
                for (k, child) in m {
                    walk(child, &format!("{ptr}/{}", esc(k)), doc, false);
                }
            }
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    check(r, ptr, doc);
                }
                if let Some(Value::Object(mapping)) = m.get("discriminator").and_then(|d| d.get("mapping")) {
                    for r in mapping.values().filter_map(Value::as_str) {
                        check(r, ptr, doc);
                    }
                }
                for (k, child) in m {
                    let p = format!("{ptr}/{}", esc(k));
                    match k.as_str() {
                        "example" | "default" | "enum" | "value" => {}
                        _ if k.starts_with("x-") => {}
                        "examples" => {
                            if let Value::Object(ex) = child {
                                for (name, e) in ex {
                                    if let Some(Value::String(r)) = e.get("$ref") {
                                        check(r, &format!("{p}/{}", esc(name)), doc);
                                    }
                                }
                            }
                        }
                        name => walk(child, &p, doc, NAME_MAPS.contains(&name)),
                    }
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    walk(child, &format!("{ptr}/{i}"), doc, false);
                }
            }
            _ => {}
        }
    }
    fn check(r: &str, ptr: &str, doc: &Value) {
        if let Some(frag) = r.strip_prefix('#')
            && !frag.is_empty()
            && doc.pointer(&percent_decode(frag)).is_none()
        {
            fail(ptr, &format!("$ref {r:?} does not resolve in the 3.0 rendition"));
        }
    }
    walk(doc, "", doc, false);
}

// ---------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------

/// Removes `key` from `m`, keeping the order of the other entries whether or not
/// serde_json's `preserve_order` feature is on (`Map::remove` would swap entries).
fn take(m: &mut Map<String, Value>, key: &str) -> Option<Value> {
    if !m.contains_key(key) {
        return None;
    }
    let mut taken = None;
    m.retain(|k, v| {
        if k == key {
            taken = Some(std::mem::take(v));
            false
        } else {
            true
        }
    });
    taken
}

/// Escapes a JSON pointer segment.
fn esc(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Unescapes a JSON pointer segment.
fn unesc(s: &str) -> String {
    s.replace("~1", "/").replace("~0", "~")
}

/// Decodes `%XX` escapes of a URI fragment.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes what a URI fragment may not hold.
fn fragment_encode(s: &str) -> String {
    let mut out = String::new();
    for &c in s.as_bytes() {
        if c.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?".contains(&c) {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

fn num_cmp(a: &Number, b: &Number) -> Ordering {
    let int = |n: &Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    match (int(a), int(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => a.as_f64().partial_cmp(&b.as_f64()).unwrap_or(Ordering::Equal),
    }
}

/// JSON Schema equality: numbers compare by value.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => num_cmp(x, y) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| json_eq(p, q)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal 3.1 document around the component schema `S`.
    fn doc_with(schema: Value) -> Value {
        json!({
            "openapi": "3.1.0",
            "info": { "title": "t", "version": "1" },
            "paths": {},
            "components": { "schemas": { "S": schema } }
        })
    }

    /// Downgrades `schema` as component `S` and returns its 3.0 form.
    fn down(schema: Value) -> Value {
        downgrade_to_30(&doc_with(schema))["components"]["schemas"]["S"].clone()
    }

    #[test]
    fn document_fields() {
        let doc = json!({
            "openapi": "3.1.1",
            "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
            "info": {
                "title": "t", "version": "1", "summary": "short",
                "license": { "name": "Apache 2.0", "identifier": "Apache-2.0", "url": "https://x" }
            },
            "webhooks": { "w": { "post": { "responses": { "200": { "description": "ok" } } } } },
            "components": { "schemas": {} }
        });
        let out = downgrade_to_30(&doc);
        assert_eq!(out["openapi"], "3.0.3");
        assert!(out.get("jsonSchemaDialect").is_none());
        assert!(out.get("webhooks").is_none());
        assert!(out["info"].get("summary").is_none());
        assert_eq!(out["info"]["license"], json!({ "name": "Apache 2.0", "url": "https://x" }));
        assert_eq!(out["paths"], json!({}), "3.0 requires paths");
        assert_eq!(doc["openapi"], "3.1.1", "the input is left alone");
    }

    #[test]
    #[should_panic(expected = "expected an OpenAPI 3.1.x document")]
    fn refuses_other_versions() {
        downgrade_to_30(
            &json!({ "openapi": "3.0.3", "info": { "title": "t", "version": "1" }, "paths": {} }),
        );
    }

    #[test]
    fn path_items_are_inlined() {
        let doc = json!({
            "openapi": "3.1.0",
            "info": { "title": "t", "version": "1" },
            "paths": { "/a": { "$ref": "#/components/pathItems/A", "summary": "local" } },
            "components": { "pathItems": {
                "A": { "$ref": "#/components/pathItems/B" },
                "B": { "summary": "remote", "get": { "responses": { "200": { "description": "ok",
                    "content": { "application/json": { "schema": { "type": ["string", "null"] } } } } } } }
            } }
        });
        let out = downgrade_to_30(&doc);
        assert!(out["components"].get("pathItems").is_none());
        let a = &out["paths"]["/a"];
        assert_eq!(a["summary"], "local", "the referring path item's fields win");
        assert!(a.get("$ref").is_none());
        assert_eq!(
            a["get"]["responses"]["200"]["content"]["application/json"]["schema"],
            json!({ "type": "string", "nullable": true }),
            "schemas of inlined path items are rewritten"
        );
    }

    #[test]
    fn reference_object_siblings_and_missing_responses() {
        let doc = json!({
            "openapi": "3.1.0",
            "info": { "title": "t", "version": "1" },
            "paths": { "/a": { "get": {
                "parameters": [{ "$ref": "#/components/parameters/P", "description": "override" }]
            } } },
            "components": { "parameters": { "P": { "name": "p", "in": "query", "schema": { "const": "x" } } } }
        });
        let out = downgrade_to_30(&doc);
        let op = &out["paths"]["/a"]["get"];
        assert_eq!(op["parameters"][0], json!({ "$ref": "#/components/parameters/P" }));
        assert_eq!(op["responses"], json!({ "default": { "description": "Not specified." } }));
        assert_eq!(out["components"]["parameters"]["P"]["schema"], json!({ "enum": ["x"] }));
    }

    #[test]
    #[should_panic(expected = "mutualTLS")]
    fn mutual_tls_panics() {
        let mut doc = doc_with(json!({}));
        doc["components"]["securitySchemes"] = json!({ "m": { "type": "mutualTLS" } });
        downgrade_to_30(&doc);
    }

    #[test]
    fn nullable_types() {
        assert_eq!(
            down(json!({ "type": ["string", "null"], "maxLength": 3 })),
            json!({ "type": "string", "nullable": true, "maxLength": 3 })
        );
        assert_eq!(
            down(json!({ "type": ["null", "integer"] })),
            json!({ "type": "integer", "nullable": true })
        );
        assert_eq!(down(json!({ "type": ["boolean"] })), json!({ "type": "boolean" }));
        assert_eq!(
            down(json!({ "nullable": true, "type": "string" })),
            json!({ "type": "string" }),
            "3.1 ignores nullable"
        );
    }

    #[test]
    fn null_type_alone() {
        assert_eq!(
            down(json!({ "type": "null", "description": "d" })),
            json!({ "type": "string", "nullable": true, "description": "d", "enum": [null] })
        );
        assert_eq!(
            down(json!({ "type": ["null"], "enum": ["a", null] })),
            json!({ "type": "string", "nullable": true, "enum": [null] })
        );
        // Nothing is both null and "a": the result accepts nothing.
        assert_eq!(
            down(json!({ "type": "null", "const": "a" })),
            json!({ "type": "string", "nullable": true, "allOf": [{ "not": {} }] })
        );
    }

    #[test]
    fn several_types() {
        assert_eq!(
            down(json!({ "type": ["string", "integer", "null"], "minLength": 1 })),
            json!({ "anyOf": [{ "type": "string", "nullable": true }, { "type": "integer" }], "minLength": 1 })
        );
        assert_eq!(
            down(
                json!({ "type": ["array", "object"], "anyOf": [{ "minItems": 1 }, { "minProperties": 1 }] })
            ),
            json!({
                "anyOf": [{ "minItems": 1 }, { "minProperties": 1 }],
                "allOf": [{ "anyOf": [{ "type": "array", "items": {} }, { "type": "object" }] }]
            })
        );
    }

    #[test]
    fn nested_schemas_are_rewritten() {
        let out = down(json!({
            "type": "object",
            "properties": { "a": { "type": "array", "items": { "type": ["string", "null"] } } },
            "additionalProperties": { "type": ["integer", "null"] },
            "allOf": [{ "const": 1 }], "anyOf": [true], "oneOf": [false], "not": { "type": "null" }
        }));
        assert_eq!(out["properties"]["a"]["items"], json!({ "type": "string", "nullable": true }));
        assert_eq!(out["additionalProperties"], json!({ "type": "integer", "nullable": true }));
        assert_eq!(out["allOf"], json!([{ "enum": [1] }]));
        assert_eq!(out["anyOf"], json!([{}]));
        assert_eq!(out["oneOf"], json!([{ "not": {} }]));
        assert_eq!(out["not"], json!({ "type": "string", "nullable": true, "enum": [null] }));
    }

    #[test]
    fn parameter_header_and_media_type_schemas() {
        let doc = json!({
            "openapi": "3.1.0",
            "info": { "title": "t", "version": "1" },
            "paths": { "/a": { "post": {
                "parameters": [{ "name": "q", "in": "query", "schema": { "const": 1 },
                                 "examples": { "one": { "value": 1 } } }],
                "requestBody": { "content": { "application/json": {
                    "schema": { "type": ["object", "null"], "examples": [{}] },
                    "examples": { "e": { "summary": "s", "value": { "type": ["x", "null"], "const": 1 } } }
                } } },
                "responses": { "200": { "description": "ok",
                    "headers": { "H": { "schema": { "type": ["integer", "null"] } } } } },
                "callbacks": { "cb": { "{$request.body#/u}": { "post": {
                    "requestBody": { "content": { "application/json": { "schema": { "const": true } } } },
                    "responses": { "200": { "description": "ok" } }
                } } } }
            } } }
        });
        let out = downgrade_to_30(&doc);
        let op = &out["paths"]["/a"]["post"];
        assert_eq!(op["parameters"][0]["schema"], json!({ "enum": [1] }));
        assert_eq!(op["parameters"][0]["examples"], json!({ "one": { "value": 1 } }), "examples maps stay");
        let media = &op["requestBody"]["content"]["application/json"];
        assert_eq!(media["schema"], json!({ "type": "object", "nullable": true, "example": {} }));
        assert_eq!(
            media["examples"],
            doc["paths"]["/a"]["post"]["requestBody"]["content"]["application/json"]["examples"]
        );
        assert_eq!(
            op["responses"]["200"]["headers"]["H"]["schema"],
            json!({ "type": "integer", "nullable": true })
        );
        assert_eq!(
            op["callbacks"]["cb"]["{$request.body#/u}"]["post"]["requestBody"]["content"]["application/json"]
                ["schema"],
            json!({ "enum": [true] })
        );
    }

    #[test]
    fn const_becomes_enum() {
        assert_eq!(down(json!({ "type": "integer", "const": 1 })), json!({ "type": "integer", "enum": [1] }));
        assert_eq!(down(json!({ "const": null })), json!({ "enum": [null] }));
        assert_eq!(
            down(json!({ "enum": [1.0, 2, 3], "const": 1 })),
            json!({ "enum": [1.0] }),
            "narrowed by JSON equality"
        );
        assert_eq!(
            down(json!({ "type": ["string", "null"], "const": "a" })),
            json!({ "type": "string", "nullable": true, "enum": ["a"] })
        );
        assert_eq!(down(json!({ "enum": ["a"], "const": "b" })), json!({ "allOf": [{ "not": {} }] }));
    }

    #[test]
    fn examples_become_example() {
        assert_eq!(
            down(json!({ "type": "string", "examples": ["a", "b"] })),
            json!({ "type": "string", "example": "a" })
        );
        assert_eq!(down(json!({ "example": "x", "examples": ["a"] })), json!({ "example": "x" }));
        assert_eq!(down(json!({ "examples": [] })), json!({}));
    }

    #[test]
    fn exclusive_bounds() {
        assert_eq!(down(json!({ "exclusiveMinimum": 0 })), json!({ "exclusiveMinimum": true, "minimum": 0 }));
        assert_eq!(
            down(json!({ "exclusiveMaximum": 1.5 })),
            json!({ "exclusiveMaximum": true, "maximum": 1.5 })
        );
        // An inclusive bound beyond the exclusive one is stricter: it stays alone.
        assert_eq!(down(json!({ "minimum": 5, "exclusiveMinimum": 3 })), json!({ "minimum": 5 }));
        assert_eq!(down(json!({ "maximum": 2, "exclusiveMaximum": 3 })), json!({ "maximum": 2 }));
        // Otherwise (equal included) the exclusive bound is the stricter one.
        assert_eq!(
            down(json!({ "minimum": 3, "exclusiveMinimum": 3 })),
            json!({ "minimum": 3, "exclusiveMinimum": true })
        );
        assert_eq!(
            down(json!({ "minimum": 1, "exclusiveMinimum": 3 })),
            json!({ "minimum": 3, "exclusiveMinimum": true })
        );
        assert_eq!(
            down(json!({ "maximum": 9, "exclusiveMaximum": 3 })),
            json!({ "maximum": 3, "exclusiveMaximum": true })
        );
        assert_eq!(
            down(json!({ "maximum": 9007199254740993u64, "exclusiveMaximum": 9007199254740992u64 })),
            json!({ "maximum": 9007199254740992u64, "exclusiveMaximum": true }),
            "large integers compare exactly"
        );
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/exclusiveMinimum")]
    fn boolean_exclusive_minimum_panics() {
        down(json!({ "minimum": 1, "exclusiveMinimum": true }));
    }

    #[test]
    fn ref_with_siblings() {
        let doc = json!({
            "openapi": "3.1.0",
            "info": { "title": "t", "version": "1" },
            "paths": {},
            "components": { "schemas": {
                "T": { "type": "object" },
                "Plain": { "$ref": "#/components/schemas/T" },
                "Described": { "$ref": "#/components/schemas/T", "description": "d", "$comment": "c" },
                "Nullable": { "$ref": "#/components/schemas/T", "type": ["object", "null"] },
                "WithAllOf": { "$ref": "#/components/schemas/T", "allOf": [{ "required": ["a"] }] }
            } }
        });
        let s = &downgrade_to_30(&doc)["components"]["schemas"];
        assert_eq!(s["Plain"], json!({ "$ref": "#/components/schemas/T" }));
        assert_eq!(
            s["Described"],
            json!({ "description": "d", "allOf": [{ "$ref": "#/components/schemas/T" }] })
        );
        assert_eq!(
            s["Nullable"],
            json!({ "type": "object", "nullable": true, "allOf": [{ "$ref": "#/components/schemas/T" }] })
        );
        assert_eq!(
            s["WithAllOf"],
            json!({ "allOf": [{ "required": ["a"] }, { "$ref": "#/components/schemas/T" }] }),
            "appended, so pointers into the allOf stay valid"
        );
    }

    #[test]
    fn content_keywords() {
        assert_eq!(
            down(json!({ "type": "string", "contentEncoding": "base64" })),
            json!({ "type": "string", "format": "byte" })
        );
        assert_eq!(
            down(json!({ "type": "string", "contentMediaType": "application/octet-stream" })),
            json!({ "type": "string", "format": "binary" })
        );
        assert_eq!(
            down(json!({ "type": "string", "contentMediaType": "image/png", "contentEncoding": "base64" })),
            json!({ "type": "string", "format": "byte" })
        );
        assert_eq!(
            down(
                json!({ "type": "string", "contentMediaType": "application/json", "contentSchema": { "type": "object" } })
            ),
            json!({ "type": "string" })
        );
        assert_eq!(
            down(json!({ "type": "string", "format": "uuid", "contentEncoding": "base64" })),
            json!({ "type": "string", "format": "uuid" })
        );
        assert_eq!(
            down(json!({ "type": "string", "format": "date" })),
            json!({ "type": "string", "format": "date" })
        );
    }

    #[test]
    fn annotations_and_unknown_keywords_are_dropped() {
        assert_eq!(
            down(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://x/s", "$anchor": "a",
                "$comment": "c", "$vocabulary": {}, "additionalItems": false, "minContains": 2, "maxContains": 3,
                "then": { "type": "string" }, "else": { "type": "integer" }, "unknownThing": 1, "x-kept": 1,
                "title": "t", "deprecated": true, "readOnly": true
            })),
            json!({ "x-kept": 1, "title": "t", "deprecated": true, "readOnly": true })
        );
    }

    #[test]
    fn defs_move_to_components() {
        let doc = json!({
            "openapi": "3.1.0",
            "info": { "title": "t", "version": "1" },
            "paths": { "/a": { "get": { "responses": { "200": { "description": "ok", "content": {
                "application/json": { "schema": { "$ref": "#/components/schemas/Tree/$defs/node" } } } } } } } },
            "components": { "schemas": {
                "Tree_node": { "type": "string" },
                "Tree": {
                    "$defs": {
                        "node": {
                            "type": "object",
                            "properties": {
                                "children": { "type": "array", "items": { "$ref": "#/components/schemas/Tree/$defs/node" } },
                                "leaf": { "$ref": "#/components/schemas/Tree/$defs/node/$defs/leaf" },
                                "named": { "$ref": "#named" }
                            },
                            "$defs": { "leaf": { "const": 1 } }
                        },
                        "other": { "$anchor": "named", "type": "boolean" }
                    },
                    "$ref": "#/components/schemas/Tree/$defs/node"
                }
            } }
        });
        let out = downgrade_to_30(&doc);
        let s = &out["components"]["schemas"];
        assert_eq!(s["Tree"], json!({ "$ref": "#/components/schemas/Tree_node_2" }));
        assert_eq!(s["Tree_node"], json!({ "type": "string" }), "existing names are not taken over");
        let node = &s["Tree_node_2"];
        assert_eq!(
            node["properties"]["children"]["items"],
            json!({ "$ref": "#/components/schemas/Tree_node_2" })
        );
        assert_eq!(node["properties"]["leaf"], json!({ "$ref": "#/components/schemas/Tree_node_leaf" }));
        assert_eq!(node["properties"]["named"], json!({ "$ref": "#/components/schemas/Tree_other" }));
        assert!(node.get("$defs").is_none());
        assert_eq!(s["Tree_node_leaf"], json!({ "enum": [1] }));
        assert_eq!(s["Tree_other"], json!({ "type": "boolean" }));
        assert_eq!(
            out["paths"]["/a"]["get"]["responses"]["200"]["content"]["application/json"]["schema"],
            json!({ "$ref": "#/components/schemas/Tree_node_2" })
        );
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/$id")]
    fn id_with_dependent_ref_panics() {
        down(
            json!({ "$id": "https://x/s", "properties": { "a": { "$ref": "#/$defs/b" } }, "$defs": { "b": {} } }),
        );
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/$dynamicRef")]
    fn dynamic_ref_panics() {
        down(json!({ "$dynamicRef": "#meta" }));
    }

    #[test]
    #[should_panic(expected = "does not resolve in the 3.0 rendition")]
    fn dangling_ref_panics() {
        let mut doc = doc_with(json!({ "$ref": "#/webhooks/w" }));
        doc["webhooks"] = json!({ "w": {} });
        downgrade_to_30(&doc);
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/properties/value")]
    fn dangling_ref_under_a_property_named_like_data_panics() {
        down(json!({ "properties": { "value": { "$ref": "#/components/schemas/Missing" } } }));
    }

    #[test]
    #[should_panic(expected = "unknown anchor")]
    fn unknown_anchor_panics() {
        down(json!({ "$ref": "#nowhere" }));
    }

    #[test]
    fn dependent_keywords() {
        assert_eq!(
            down(json!({ "dependentRequired": { "a": ["b", "c", "b"], "z": [] } })),
            json!({ "allOf": [{ "anyOf": [
                { "not": { "type": "object", "required": ["a"] } },
                { "required": ["b", "c"] }
            ] }] })
        );
        assert_eq!(
            down(json!({ "allOf": [{}], "dependentSchemas": { "a": { "required": ["b"] }, "t": true } })),
            json!({ "allOf": [{}, { "anyOf": [
                { "not": { "type": "object", "required": ["a"] } },
                { "required": ["b"] }
            ] }] })
        );
    }

    #[test]
    fn if_then_else() {
        let i = json!({ "required": ["kind"] });
        let t = json!({ "required": ["a"] });
        let e = json!({ "required": ["b"] });
        assert_eq!(
            down(json!({ "if": i, "then": t, "else": e })),
            json!({ "allOf": [{ "anyOf": [{ "allOf": [i, t] }, { "allOf": [{ "not": i }, e] }] }] })
        );
        assert_eq!(down(json!({ "if": i, "then": t })), json!({ "allOf": [{ "anyOf": [{ "not": i }, t] }] }));
        assert_eq!(down(json!({ "if": i, "else": e })), json!({ "allOf": [{ "anyOf": [i, e] }] }));
        assert_eq!(down(json!({ "if": i })), json!({}));
        assert_eq!(
            down(json!({ "if": { "const": null }, "then": false })),
            json!({ "allOf": [{ "anyOf": [{ "not": { "enum": [null] } }, { "not": {} }] }] })
        );
    }

    #[test]
    fn unevaluated_keywords() {
        assert_eq!(
            down(json!({ "properties": { "a": {} }, "unevaluatedProperties": false })),
            json!({ "properties": { "a": {} }, "additionalProperties": false })
        );
        assert_eq!(
            down(json!({ "additionalProperties": { "type": "string" }, "unevaluatedProperties": false })),
            json!({ "additionalProperties": { "type": "string" } }),
            "everything is evaluated already"
        );
        assert_eq!(down(json!({ "allOf": [{}], "unevaluatedProperties": true })), json!({ "allOf": [{}] }));
        assert_eq!(
            down(json!({ "type": "array", "unevaluatedItems": { "type": ["string", "null"] } })),
            json!({ "type": "array", "items": { "type": "string", "nullable": true } })
        );
        assert_eq!(
            down(json!({ "type": "array", "items": { "type": "string" }, "unevaluatedItems": false })),
            json!({ "type": "array", "items": { "type": "string" } })
        );
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/unevaluatedProperties")]
    fn unevaluated_properties_with_applicator_panics() {
        down(json!({ "allOf": [{ "properties": { "a": {} } }], "unevaluatedProperties": false }));
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/unevaluatedItems")]
    fn unevaluated_items_with_ref_panics() {
        let mut doc = doc_with(json!({ "$ref": "#/components/schemas/T", "unevaluatedItems": false }));
        doc["components"]["schemas"]["T"] = json!({});
        downgrade_to_30(&doc);
    }

    #[test]
    fn pattern_properties() {
        assert_eq!(down(json!({ "patternProperties": {} })), json!({}));
        assert_eq!(down(json!({ "patternProperties": { "^x": true } })), json!({}));
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/properties/p/patternProperties")]
    fn pattern_properties_panic() {
        down(json!({ "properties": { "p": { "patternProperties": { "^x": { "type": "string" } } } } }));
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/patternProperties")]
    fn trivial_pattern_properties_beside_additional_properties_panic() {
        down(json!({ "patternProperties": { "^x": {} }, "additionalProperties": false }));
    }

    #[test]
    fn prefix_items() {
        assert_eq!(
            down(json!({ "type": "array", "prefixItems": [true, {}] })),
            json!({ "type": "array", "items": {} })
        );
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/prefixItems")]
    fn prefix_items_panic() {
        down(json!({ "type": "array", "prefixItems": [{ "type": "string" }] }));
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/items")]
    fn array_items_panic() {
        down(json!({ "type": "array", "items": [{ "type": "string" }] }));
    }

    #[test]
    fn contains() {
        assert_eq!(down(json!({ "contains": true })), json!({ "minItems": 1 }));
        assert_eq!(
            down(json!({ "contains": {}, "minContains": 2, "maxContains": 4, "minItems": 3, "maxItems": 9 })),
            json!({ "minItems": 3, "maxItems": 4 })
        );
        assert_eq!(down(json!({ "contains": { "type": "string" }, "minContains": 0 })), json!({}));
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/contains")]
    fn contains_panics() {
        down(json!({ "contains": { "type": "string" } }));
    }

    #[test]
    fn property_names() {
        assert_eq!(down(json!({ "propertyNames": false })), json!({ "maxProperties": 0 }));
        assert_eq!(down(json!({ "propertyNames": true, "maxProperties": 3 })), json!({ "maxProperties": 3 }));
    }

    #[test]
    #[should_panic(expected = "#/components/schemas/S/propertyNames")]
    fn property_names_panic() {
        down(json!({ "propertyNames": { "maxLength": 3 } }));
    }

    #[test]
    fn boolean_schemas() {
        assert_eq!(down(json!(true)), json!({}));
        assert_eq!(down(json!(false)), json!({ "not": {} }));
        assert_eq!(
            down(json!({ "properties": { "a": false, "b": true }, "additionalProperties": false })),
            json!({ "properties": { "a": { "not": {} }, "b": {} }, "additionalProperties": false })
        );
        assert_eq!(
            down(json!({ "type": "array", "items": false })),
            json!({ "type": "array", "items": { "not": {} } })
        );
    }

    #[test]
    fn empty_required_enum_and_array_items() {
        assert_eq!(down(json!({ "type": "object", "required": [] })), json!({ "type": "object" }));
        assert_eq!(down(json!({ "enum": [] })), json!({ "allOf": [{ "not": {} }] }));
        assert_eq!(down(json!({ "type": "array" })), json!({ "type": "array", "items": {} }));
    }

    #[test]
    fn key_order_is_kept() {
        let probe: Map<String, Value> =
            [("b".to_owned(), json!(1)), ("a".to_owned(), json!(2))].into_iter().collect();
        if probe.keys().next().map(String::as_str) != Some("b") {
            return; // serde_json without `preserve_order` sorts keys: there is no order to keep.
        }
        let out = down(
            json!({ "description": "d", "type": ["string", "null"], "examples": ["a"], "format": "date" }),
        );
        let keys: Vec<&str> = out.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["description", "type", "nullable", "example", "format"]);
    }

    /// Calls `f(keyword, value, pointer)` on every keyword of every schema reachable from
    /// `v`, stepping over data (`example`, `default`, `enum`, `value`) and property names.
    fn each_keyword(v: &Value, ptr: &str, f: &mut dyn FnMut(&str, &Value, &str)) {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    let p = format!("{ptr}/{}", esc(k));
                    f(k, child, &p);
                    match k.as_str() {
                        "example" | "default" | "enum" | "value" => {}
                        "properties" => {
                            for (name, s) in child.as_object().into_iter().flatten() {
                                each_keyword(s, &format!("{p}/{}", esc(name)), f);
                            }
                        }
                        _ => each_keyword(child, &p, f),
                    }
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    each_keyword(child, &format!("{ptr}/{i}"), f);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn real_contract() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi/openapi.yaml");
        let text = std::fs::read_to_string(path).expect("openapi/openapi.yaml");
        let doc: Value = yaml_serde::from_str(&text).expect("the contract parses");
        let out = downgrade_to_30(&doc);

        assert_eq!(out["openapi"], "3.0.3");
        assert!(out.get("jsonSchemaDialect").is_none());
        assert!(out["info"].get("summary").is_none());
        let mut problems = Vec::new();
        each_keyword(&out, "", &mut |k, v, p| match k {
            "type" if v.is_array() || v == "null" => problems.push(format!("type {v} at {p}")),
            "const" | "$defs" | "prefixItems" | "patternProperties" | "unevaluatedProperties" => {
                problems.push(format!("{k} at {p}"))
            }
            "examples" if v.is_array() => problems.push(format!("schema examples at {p}")),
            "exclusiveMinimum" | "exclusiveMaximum" if !v.is_boolean() => {
                problems.push(format!("{k} at {p}"))
            }
            _ => {}
        });
        assert!(problems.is_empty(), "3.1 constructs left: {problems:#?}");

        let s = &out["components"]["schemas"];
        assert_eq!(s["Document"]["properties"]["projectId"], json!({ "type": "string", "nullable": true }));
        assert_eq!(
            s["Document"]["properties"]["sizeBytes"],
            json!({ "type": "integer", "nullable": true, "format": "int64" })
        );
        assert_eq!(s["Problem"]["properties"]["current"]["type"], "object");
        assert_eq!(s["Problem"]["properties"]["current"]["nullable"], true);
        assert_eq!(s["ExportConfiguration"]["properties"]["version"]["enum"], json!([1]));
        // Media Type examples maps are untouched.
        let media = "/paths/~1v1~1workspaces~1{workspaceId}~1projects~1{projectId}~1documents~1{documentId}~1type/put/requestBody/content/application~1json/examples";
        assert_eq!(out.pointer(media), doc.pointer(media));
        // Security requirements keep their schemes, without role names.
        let assign = "/paths/~1v1~1workspaces~1{workspaceId}~1projects~1{projectId}~1documents~1{documentId}~1type/put/security";
        assert_eq!(doc.pointer(assign), Some(&json!([{ "bearerAuth": ["workspace-member"] }])));
        assert_eq!(out.pointer(assign), Some(&json!([{ "bearerAuth": [] }])));
        // Outside the Schema Objects nothing changes but the documented root and `info`
        // fields and the role names: every operation, parameter, response and `examples` map
        // is kept as it is.
        fn without_schemas(v: &Value) -> Value {
            match v {
                Value::Object(m) => Value::Object(
                    m.iter()
                        .filter(|(k, _)| {
                            !matches!(
                                k.as_str(),
                                "schema" | "schemas" | "openapi" | "jsonSchemaDialect" | "info" | "security"
                            )
                        })
                        .map(|(k, c)| (k.clone(), without_schemas(c)))
                        .collect(),
                ),
                Value::Array(a) => Value::Array(a.iter().map(without_schemas).collect()),
                other => other.clone(),
            }
        }
        assert_eq!(without_schemas(&doc), without_schemas(&out));
        // Downgrading is deterministic.
        assert_eq!(downgrade_to_30(&doc), out);
    }

    #[test]
    fn role_names_of_http_schemes_are_emptied_and_oauth_scopes_kept() {
        let doc = json!({
            "openapi": "3.1.0",
            "info": { "title": "t", "version": "1" },
            "security": [{ "bearer": ["member"] }],
            "paths": { "/a": { "get": {
                "security": [{ "bearer": ["platform-admin"], "oauth": ["read"] }],
                "responses": { "200": { "description": "ok" } }
            } } },
            "components": { "securitySchemes": {
                "bearer": { "type": "http", "scheme": "bearer" },
                "oauth": { "type": "oauth2", "flows": {} }
            } }
        });
        let out = downgrade_to_30(&doc);
        assert_eq!(out["security"], json!([{ "bearer": [] }]));
        assert_eq!(out["paths"]["/a"]["get"]["security"], json!([{ "bearer": [], "oauth": ["read"] }]));
    }
}
