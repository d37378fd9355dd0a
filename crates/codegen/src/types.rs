//! Rust types for the document's schemas.
//!
//! Every component schema becomes a Rust item of the same name: an object with properties
//! a struct (closed objects get `deny_unknown_fields`), a string enum an `enum`, anything
//! else a type alias. Inline objects and enums inside a schema become items named after
//! their parent and property (`AssistantImport` + `document` → `AssistantImportDocument`).
//! Every operation also gets `{Operation}Path` and `{Operation}Query` structs for its path
//! and query parameters.
//!
//! Mapping: `integer` → `i64` (read saturating, so any JSON integer the schema admits
//! deserialises; the runtime validator has already checked its bounds), `number` → `f64`, `boolean` → `bool`, `string` → `String`,
//! `array` → `Vec`, an object without properties → a JSON map, nullable → `Option`. An
//! optional property is `Option` and is left out when `None`; an optional nullable one is
//! `Option<Option<_>>`, so absent (`None`) and `null` (`Some(None)`) stay apart.

use crate::names::{literal, pascal_case, snake_case};
use crate::{deref, ref_name};
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write;

/// Generates the Rust source of every component schema and every operation's parameter
/// structs. `wire` is the path of the module holding the `saturating_i64` helpers.
pub fn generate(doc: &Value, wire: &str) -> String {
    let mut generator =
        Generator { doc, wire: wire.to_owned(), out: String::new(), defined: BTreeSet::new() };
    generator.out.push_str("// @generated from openapi/openapi.yaml by wpds-codegen. Do not edit.\n\n");
    if let Some(schemas) = doc.pointer("/components/schemas").and_then(Value::as_object) {
        for (name, schema) in schemas {
            generator.component(name, schema, &format!("/components/schemas/{name}"));
        }
    }
    for op in crate::operations::collect(doc) {
        generator.parameters(&op.type_prefix, "Path", &op.path_params);
        generator.parameters(&op.type_prefix, "Query", &op.query_params);
    }
    generator.out
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

impl Generator<'_> {
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
        code.push_str("        }\n    }\n}\n\n");
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
    fn parameters(&mut self, prefix: &str, kind: &str, params: &[crate::operations::Parameter]) {
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
            literal(&format!("The {} parameters of `{}`.", kind.to_lowercase(), prefix)),
        );
        self.defined.insert(name);
    }
}
