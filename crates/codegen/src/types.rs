//! Rust types for the document's schemas.
//!
//! Every component schema becomes a Rust item of the same name: an object with properties
//! a struct (closed objects get `deny_unknown_fields`), a string enum an `enum`, anything
//! else a type alias. Inline objects and enums inside a schema become items named after
//! their parent and property (`AssistantImport` + `document` → `AssistantImportDocument`).
//! Every operation also gets `{Operation}Path`, `{Operation}Query` and `{Operation}Headers`
//! structs for its path, query and header parameters (a header parameter must be a string,
//! integer, number or boolean: a header carries one value, and the build fails naming the
//! operation and the header otherwise).
//!
//! [`generate_json_schema`] reads a plain JSON Schema document the same way (such as
//! `openapi/fixture.schema.json`): its root and its `$defs` become the items.
//!
//! Mapping: `integer` → `i64` (read saturating, so any JSON integer the schema admits
//! deserialises; the runtime validator has already checked its bounds), `number` → `f64`, `boolean` → `bool`, `string` → `String`,
//! `array` → `Vec`, an object without properties → a JSON map, nullable → `Option`. An
//! optional property is `Option` and is left out when `None`; an optional nullable one is
//! `Option<Option<_>>`, so absent (`None`) and `null` (`Some(None)`) stay apart. An
//! `anyOf` of one schema and `{"type": "null"}` is that schema's type made `Option`; an
//! `anyOf` of several string schemas (a format, a pattern, a `const` string) is `String`.

use crate::names::{literal, pascal_case, snake_case};
use crate::operations::RustNames;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::fmt::Write;
use wpds_document::operations::{Parameter, collect};
use wpds_document::{deref, ref_name};

/// Generates the Rust source of every component schema and every operation's parameter
/// structs. `wire` is the path of the module holding the `saturating_i64` helpers.
pub fn generate(doc: &Value, wire: &str) -> String {
    let mut generator = Generator::new(doc, wire, "openapi/openapi.yaml");
    if let Some(schemas) = doc.pointer("/components/schemas").and_then(Value::as_object) {
        for (name, schema) in schemas {
            generator.component(name, schema, &format!("/components/schemas/{name}"));
        }
    }
    for op in collect(doc) {
        generator.parameters(&op.type_prefix(), "Path", &op.path_params);
        generator.parameters(&op.type_prefix(), "Query", &op.query_params);
        for param in &op.header_params {
            let (kind, _) = schema_type(deref(doc, &param.schema));
            if !matches!(kind, Some("string" | "integer" | "number" | "boolean")) {
                panic!(
                    "{}: header parameter `{}`: a {} schema is not supported; a header parameter is a string, integer, number or boolean",
                    op.id,
                    param.name,
                    kind.unwrap_or("typeless")
                );
            }
        }
        generator.parameters(&op.type_prefix(), "Headers", &op.header_params);
    }
    generator.out
}

/// Generates the Rust source of a plain JSON Schema document (draft 2020-12) read from
/// `source`: the root schema becomes the item `root`, each entry of its `$defs` an item
/// named in PascalCase (`documentScope` → `DocumentScope`), mapped as [`generate`] maps
/// component schemas. References must name an entry of the root's `$defs`
/// (`#/$defs/name`); any other reference, a nested `$defs`, or two entries with one Rust
/// name fail naming the place (`openapi/fixture.schema.json#/$defs/…`). `wire` is the
/// path of the module holding the `saturating_i64` helpers.
pub fn generate_json_schema(schema: &Value, root: &str, source: &str, wire: &str) -> String {
    let doc = as_components(schema, root, source);
    let mut generator = Generator::new(&doc, wire, source);
    let schemas = &doc["components"]["schemas"];
    generator.component(root, &schemas[root], &format!("{source}#"));
    for def in schema.get("$defs").and_then(Value::as_object).into_iter().flat_map(Map::keys) {
        let name = def_name(def);
        generator.component(&name, &schemas[&name], &format!("{source}#/$defs/{def}"));
    }
    generator.out
}

/// The Rust name of the `$defs` entry `def`.
fn def_name(def: &str) -> String {
    pascal_case(def)
}

/// `schema` as a document the generator reads: `{"components": {"schemas": {root, Defs…}}}`,
/// the root without its `$defs`, every `#/$defs/x` reference rewritten to
/// `#/components/schemas/X`.
fn as_components(schema: &Value, root: &str, source: &str) -> Value {
    let defs = match schema.get("$defs") {
        None => Map::new(),
        Some(Value::Object(defs)) => defs.clone(),
        Some(_) => panic!("{source}#/$defs: must be an object"),
    };
    let mut schemas = Map::new();
    let mut root_schema = schema.clone();
    if let Some(object) = root_schema.as_object_mut() {
        object.remove("$defs");
    }
    schemas.insert(root.to_owned(), rewrite_refs(&root_schema, &defs, &format!("{source}#")));
    for (def, def_schema) in &defs {
        let name = def_name(def);
        let pointer = format!("{source}#/$defs/{def}");
        if schemas.contains_key(&name) {
            panic!("{pointer}: its Rust name {name} is taken by another schema");
        }
        schemas.insert(name, rewrite_refs(def_schema, &defs, &pointer));
    }
    let mut components = Map::new();
    components.insert("schemas".to_owned(), Value::Object(schemas));
    let mut doc = Map::new();
    doc.insert("components".to_owned(), Value::Object(components));
    Value::Object(doc)
}

/// `value` with every `#/$defs/x` reference rewritten to `#/components/schemas/X`.
fn rewrite_refs(value: &Value, defs: &Map<String, Value>, pointer: &str) -> Value {
    match value {
        Value::Object(object) => {
            let mut out = Map::new();
            for (key, item) in object {
                let at = format!("{pointer}/{key}");
                let item = match (key.as_str(), item) {
                    ("$ref", Value::String(reference)) => {
                        let def = reference
                            .strip_prefix("#/$defs/")
                            .filter(|def| defs.contains_key(*def))
                            .unwrap_or_else(|| {
                                panic!("{at}: unsupported reference {reference}: only `#/$defs/NAME` of the root is")
                            });
                        Value::String(format!("#/components/schemas/{}", def_name(def)))
                    }
                    ("$defs", _) => panic!("{at}: unsupported nested `$defs`: only the root's are read"),
                    _ => rewrite_refs(item, defs, &at),
                };
                out.insert(key.clone(), item);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| rewrite_refs(item, defs, &format!("{pointer}/{i}")))
                .collect(),
        ),
        other => other.clone(),
    }
}

struct Generator<'a> {
    doc: &'a Value,
    wire: String,
    out: String,
    defined: BTreeSet<String>,
}

/// The JSON Schema `type` of a schema and whether it admits `null`.
fn schema_type(schema: &Value) -> (Option<&str>, bool) {
    match schema.get("type") {
        Some(Value::String(t)) => (Some(t.as_str()), false),
        Some(Value::Array(types)) => {
            let nullable = types.iter().any(|t| t == "null");
            let others: Vec<&str> = types.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect();
            match others.as_slice() {
                [one] => (Some(one), nullable),
                [] => (None, nullable),
                _ => (None, nullable),
            }
        }
        _ => (None, false),
    }
}

fn doc_attr(schema: &Value, indent: &str) -> String {
    match schema.get("description").and_then(Value::as_str) {
        Some(text) => format!("{indent}#[doc = {}]\n", literal(text.trim())),
        None => String::new(),
    }
}

impl<'a> Generator<'a> {
    /// A generator over `doc` whose output starts with the header naming `source`.
    fn new(doc: &'a Value, wire: &str, source: &str) -> Self {
        let out = format!("// @generated from {source} by wpds-codegen. Do not edit.\n\n");
        Generator { doc, wire: wire.to_owned(), out, defined: BTreeSet::new() }
    }

    fn component(&mut self, name: &str, schema: &Value, pointer: &str) {
        let ty = self.type_of(schema, name, pointer);
        if !self.defined.contains(name) {
            // Neither a struct nor an enum: an alias keeps the component's name usable.
            let docs = doc_attr(schema, "");
            let _ = write!(self.out, "{docs}pub type {name} = {ty};\n\n");
            self.defined.insert(name.to_owned());
        }
    }

    /// The Rust type for `schema`, defining a named item `name` when the schema needs one.
    fn type_of(&mut self, schema: &Value, name: &str, pointer: &str) -> String {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            return ref_name(reference).to_owned();
        }
        if let Some(alternatives) = schema.get("anyOf") {
            return self.any_of(alternatives, name, pointer);
        }
        let (ty, nullable) = schema_type(schema);
        let inner = match ty {
            Some("string") if schema.get("enum").is_some() => {
                self.string_enum(name, schema, pointer);
                name.to_owned()
            }
            Some("string") => "String".to_owned(),
            Some("integer") => "i64".to_owned(),
            Some("number") => "f64".to_owned(),
            Some("boolean") => "bool".to_owned(),
            Some("array") => {
                let items =
                    schema.get("items").unwrap_or_else(|| panic!("{pointer}: an array schema needs `items`"));
                let item = self.type_of(items, &format!("{name}Item"), &format!("{pointer}/items"));
                format!("Vec<{item}>")
            }
            Some("object") if schema.get("properties").is_some() => {
                self.object(name, schema, pointer);
                name.to_owned()
            }
            Some("object") => "serde_json::Map<String, serde_json::Value>".to_owned(),
            None if schema.as_object().is_some_and(|o| o.keys().all(|k| k == "description")) => {
                "serde_json::Value".to_owned()
            }
            other => panic!("{pointer}: unsupported schema type {other:?}"),
        };
        if nullable { format!("Option<{inner}>") } else { inner }
    }

    /// The Rust type of an `anyOf`: its `{"type": "null"}` alternatives make it `Option`;
    /// the others must be one schema (its type) or only strings (`String`: which strings
    /// are admitted is the validator's business).
    fn any_of(&mut self, alternatives: &Value, name: &str, pointer: &str) -> String {
        let alternatives =
            alternatives.as_array().unwrap_or_else(|| panic!("{pointer}/anyOf: must be an array"));
        let is_null = |schema: &Value| schema.get("type").and_then(Value::as_str) == Some("null");
        let nullable = alternatives.iter().any(is_null);
        let others: Vec<(usize, &Value)> =
            alternatives.iter().enumerate().filter(|(_, schema)| !is_null(schema)).collect();
        let inner = match others.as_slice() {
            [] => panic!("{pointer}/anyOf: unsupported: no alternative but null"),
            [(i, one)] => self.type_of(one, name, &format!("{pointer}/anyOf/{i}")),
            several => {
                if let Some((i, _)) = several.iter().find(|(_, schema)| !self.is_string(schema)) {
                    panic!(
                        "{pointer}/anyOf/{i}: unsupported anyOf: only one schema or null, or strings only, are supported"
                    );
                }
                "String".to_owned()
            }
        };
        if nullable { format!("Option<{inner}>") } else { inner }
    }

    /// Whether `schema` admits only strings and is read as a plain `String` (no enum).
    fn is_string(&self, schema: &Value) -> bool {
        let target = deref(self.doc, schema);
        if let Some(value) = target.get("const") {
            return value.is_string();
        }
        schema_type(target) == (Some("string"), false) && target.get("enum").is_none()
    }

    fn string_enum(&mut self, name: &str, schema: &Value, pointer: &str) {
        if !self.defined.insert(name.to_owned()) {
            return;
        }
        let values: Vec<&str> = schema["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{pointer}: `enum` must be an array"))
            .iter()
            .map(|v| v.as_str().unwrap_or_else(|| panic!("{pointer}: string enum with a non-string value")))
            .collect();
        let mut code = doc_attr(schema, "");
        code.push_str(
            "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]\n",
        );
        let _ = writeln!(code, "pub enum {name} {{");
        for value in &values {
            let _ = writeln!(code, "    #[serde(rename = {})]\n    {},", literal(value), pascal_case(value));
        }
        code.push_str("}\n\n");
        let _ = writeln!(code, "impl {name} {{");
        let _ = writeln!(code, "    /// Every value, in the document's order.");
        let _ = writeln!(
            code,
            "    pub const ALL: &'static [Self] = &[{}];",
            values.iter().map(|v| format!("Self::{}", pascal_case(v))).collect::<Vec<_>>().join(", ")
        );
        code.push_str("    /// The value as it appears on the wire.\n    pub const fn as_str(self) -> &'static str {\n        match self {\n");
        for value in &values {
            let _ = writeln!(code, "            Self::{} => {},", pascal_case(value), literal(value));
        }
        code.push_str("        }\n    }\n");
        code.push_str(
            "    /// The value whose wire form is `value` (the inverse of `as_str`), if any.\n    pub fn from_wire(value: &str) -> Option<Self> {\n        Self::ALL.iter().copied().find(|v| v.as_str() == value)\n    }\n}\n\n",
        );
        let _ = writeln!(
            code,
            "impl std::fmt::Display for {name} {{\n    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{\n        f.write_str(self.as_str())\n    }}\n}}\n"
        );
        self.out.push_str(&code);
    }

    fn object(&mut self, name: &str, schema: &Value, pointer: &str) {
        if !self.defined.insert(name.to_owned()) {
            return;
        }
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{pointer}: `properties` must be an object"));
        let mut fields = String::new();
        for (prop, prop_schema) in properties {
            let field_pointer = format!("{pointer}/properties/{prop}");
            let ty = self.type_of(prop_schema, &format!("{name}{}", pascal_case(prop)), &field_pointer);
            let target = deref(self.doc, prop_schema);
            let is_integer = schema_type(target).0 == Some("integer");
            fields.push_str(&doc_attr(prop_schema, "    "));
            let mut serde_attrs = vec![format!("rename = {}", literal(prop))];
            let field_ty = if required.contains(prop.as_str()) {
                if is_integer && ty == "i64" {
                    serde_attrs.push(format!("deserialize_with = \"{}::saturating_i64\"", self.wire));
                }
                ty
            } else {
                serde_attrs.push("default".to_owned());
                serde_attrs.push("skip_serializing_if = \"Option::is_none\"".to_owned());
                if is_integer && ty == "i64" {
                    serde_attrs.push(format!("deserialize_with = \"{}::saturating_i64_opt\"", self.wire));
                }
                if ty.starts_with("Option<") {
                    // Optional and nullable: `None` is absent, `Some(None)` is `null`.
                    serde_attrs.push(format!("with = \"{}::double_option\"", self.wire));
                }
                format!("Option<{ty}>")
            };
            let _ = writeln!(
                fields,
                "    #[serde({})]\n    pub {}: {field_ty},",
                serde_attrs.join(", "),
                snake_case(prop)
            );
        }
        let mut code = doc_attr(schema, "");
        code.push_str("#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]\n");
        if closed {
            code.push_str("#[serde(deny_unknown_fields)]\n");
        }
        let _ = write!(code, "pub struct {name} {{\n{fields}}}\n\n");
        self.out.push_str(&code);
    }

    /// `{Operation}Path` / `{Operation}Query`: one field per parameter.
    fn parameters(&mut self, prefix: &str, kind: &str, params: &[Parameter]) {
        if params.is_empty() {
            return;
        }
        let name = format!("{prefix}{kind}");
        let mut fields = String::new();
        for param in params {
            let ty =
                self.type_of(&param.schema, &format!("{prefix}{}", pascal_case(&param.name)), &param.pointer);
            if let Some(description) = &param.description {
                let _ = writeln!(fields, "    #[doc = {}]", literal(description));
            }
            let mut attrs = vec![format!("rename = {}", literal(&param.name))];
            let field_ty = if param.required {
                ty
            } else {
                attrs.push("default".to_owned());
                attrs.push("skip_serializing_if = \"Option::is_none\"".to_owned());
                if ty == "i64" {
                    attrs.push(format!("deserialize_with = \"{}::saturating_i64_opt\"", self.wire));
                }
                format!("Option<{ty}>")
            };
            let _ = writeln!(
                fields,
                "    #[serde({})]\n    pub {}: {field_ty},",
                attrs.join(", "),
                snake_case(&param.name)
            );
        }
        let _ = write!(
            self.out,
            "#[doc = {}]\n#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]\n#[serde(deny_unknown_fields)]\npub struct {name} {{\n{fields}}}\n\n",
            literal(&format!(
                "The {} parameters of `{}`.",
                if kind == "Headers" { "header".to_owned() } else { kind.to_lowercase() },
                prefix
            )),
        );
        self.defined.insert(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SOURCE: &str = "fixture.schema.json";

    fn generated(schema: Value) -> String {
        generate_json_schema(&schema, "File", SOURCE, "crate::wire")
    }

    fn failure(schema: Value) -> String {
        let panic = std::panic::catch_unwind(|| generated(schema)).expect_err("the build fails");
        panic.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn a_json_schema_gives_its_root_and_its_defs_in_pascal_case() {
        let code = generated(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "$schema": {"type": "string"},
                "users": {"type": "array", "items": {"$ref": "#/$defs/user"}}
            },
            "$defs": {
                "id": {"type": "string", "description": "A record id."},
                "nullableId": {"anyOf": [{"$ref": "#/$defs/id"}, {"type": "null"}]},
                "timestamp": {"type": "string", "format": "date-time"},
                "user": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "managerId", "confirmedAt"],
                    "properties": {
                        "id": {"$ref": "#/$defs/id"},
                        "managerId": {"$ref": "#/$defs/nullableId"},
                        "confirmedAt": {"anyOf": [{"$ref": "#/$defs/timestamp"}, {"const": ""}]},
                        "retiredAt": {"anyOf": [{"$ref": "#/$defs/timestamp"}, {"type": "null"}]}
                    }
                }
            }
        }));
        assert!(code.starts_with("// @generated from fixture.schema.json by wpds-codegen."), "{code}");
        assert!(code.contains("#[serde(deny_unknown_fields)]\npub struct File {\n"), "{code}");
        assert!(code.contains("    #[serde(rename = \"$schema\", default, skip_serializing_if = \"Option::is_none\")]\n    pub schema: Option<String>,\n"), "{code}");
        assert!(code.contains("    pub users: Option<Vec<User>>,\n"), "{code}");
        assert!(code.contains("#[doc = \"A record id.\"]\npub type Id = String;\n"), "{code}");
        assert!(code.contains("pub type NullableId = Option<Id>;\n"), "{code}");
        assert!(code.contains("    pub manager_id: NullableId,\n"), "{code}");
        assert!(code.contains("    pub confirmed_at: String,\n"), "{code}");
        assert!(code.contains("    pub retired_at: Option<Option<Timestamp>>,\n"), "{code}");
    }

    #[test]
    fn an_unsupported_construct_of_a_json_schema_fails_naming_its_place() {
        let mixed = json!({"type": "object", "properties": {"at": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}});
        assert_eq!(
            failure(mixed),
            "fixture.schema.json#/properties/at/anyOf/0: unsupported anyOf: only one schema or null, or strings only, are supported"
        );
        let elsewhere = json!({"type": "object", "properties": {"a": {"$ref": "other.json#/a"}}});
        assert_eq!(
            failure(elsewhere),
            "fixture.schema.json#/properties/a/$ref: unsupported reference other.json#/a: only `#/$defs/NAME` of the root is"
        );
        let missing = json!({"$defs": {"a": {"$ref": "#/$defs/b"}}});
        assert!(
            failure(missing)
                .starts_with("fixture.schema.json#/$defs/a/$ref: unsupported reference #/$defs/b")
        );
        let constant = json!({"$defs": {"one": {"const": 1}}});
        assert_eq!(failure(constant), "fixture.schema.json#/$defs/one: unsupported schema type None");
        let twice = json!({"$defs": {"user": {"type": "string"}, "User": {"type": "string"}}});
        assert_eq!(
            failure(twice),
            "fixture.schema.json#/$defs/User: its Rust name User is taken by another schema"
        );
    }
}
