//! Identifier conversions between the document's names and Rust's.

/// `assignDocumentType` → `assign_document_type`; `workspaceId` → `workspace_id`;
/// `$schema` → `schema` (a `$` cannot be part of a Rust name).
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev_lower_or_digit = false;
    for c in name.chars() {
        if c == '$' {
            continue;
        }
        if c == '-' || c == ' ' || c == '.' {
            out.push('_');
            prev_lower_or_digit = false;
        } else if c.is_ascii_uppercase() {
            if prev_lower_or_digit {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower_or_digit = false;
        } else {
            out.push(c);
            prev_lower_or_digit = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
    }
    escape_keyword(out)
}

/// `assignDocumentType` → `AssignDocumentType`; `skipped_already_in_sync` →
/// `SkippedAlreadyInSync`; `$schema` → `Schema`.
pub fn pascal_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper_next = true;
    for c in name.chars() {
        if c == '$' {
            continue;
        }
        if c == '_' || c == '-' || c == ' ' || c == '.' {
            upper_next = true;
        } else if upper_next {
            out.push(c.to_ascii_uppercase());
            upper_next = false;
        } else {
            out.push(c);
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}

fn escape_keyword(name: String) -> String {
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
        "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
        "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
        "where", "while", "yield",
    ];
    if KEYWORDS.contains(&name.as_str()) { format!("r#{name}") } else { name }
}

/// A Rust string literal for `text` (for `#[doc = ...]` and string constants).
pub fn literal(text: &str) -> String {
    format!("{text:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_camel_case_to_snake_case() {
        assert_eq!(snake_case("assignDocumentType"), "assign_document_type");
        assert_eq!(snake_case("workspaceId"), "workspace_id");
        assert_eq!(snake_case("in"), "r#in");
        assert_eq!(snake_case("type"), "r#type");
        assert_eq!(snake_case("$schema"), "schema");
    }

    #[test]
    fn converts_values_to_pascal_case() {
        assert_eq!(pascal_case("skipped_already_in_sync"), "SkippedAlreadyInSync");
        assert_eq!(pascal_case("modelNumber"), "ModelNumber");
        assert_eq!(pascal_case("Bearer"), "Bearer");
        assert_eq!(pascal_case("$schema"), "Schema");
        assert_eq!(pascal_case("nullableVersionedRef"), "NullableVersionedRef");
    }
}
