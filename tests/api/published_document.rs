//! The published contract: exact YAML bytes, the JSON and 3.0.3 renditions, Swagger UI,
//! the problem-type pages and the conformance kit.

use crate::support::spawn_app;
use serde_json::Value;

#[test]
fn the_yaml_document_is_served_byte_for_byte() {
    let app = spawn_app();
    let response = app.get("/openapi.yaml");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/yaml"));
    let file = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.yaml")).unwrap();
    assert_eq!(response.body, file);
}

#[test]
fn the_json_rendition_is_the_same_document() {
    let app = spawn_app();
    let served = app.get("/openapi.json").json();
    assert_eq!(served["openapi"], "3.1.0");
    assert_eq!(served["info"]["version"], "1.0.0");
    // The file as it is now, parsed here: not the value the build compiled into the server.
    let file = wpds_document::load_document(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/openapi/openapi.yaml"
    )));
    assert_eq!(served, file);
}

#[test]
fn the_3_0_rendition_has_no_3_1_only_constructs() {
    let app = spawn_app();
    let served = app.get("/openapi-3.0.json").json();
    assert_eq!(served["openapi"], "3.0.3");
    let text = served.to_string();
    assert!(!text.contains("\"const\""), "const is rewritten to enum");
    assert!(!text.contains("\"null\""), "null types are rewritten to nullable");
    assert!(served.get("jsonSchemaDialect").is_none());
    let current = &served["components"]["schemas"]["Problem"]["properties"]["current"];
    assert_eq!((current["type"].as_str(), current["nullable"].as_bool()), (Some("object"), Some(true)));
    let paths = served["paths"].as_object().unwrap();
    assert_eq!(paths.len(), wpds_contract::document::parsed()["paths"].as_object().unwrap().len());
}

#[test]
fn swagger_ui_is_served_from_the_vendored_bundle_and_reads_the_document() {
    let app = spawn_app();
    let page = app.get("/docs/");
    assert_eq!(page.status, 200);
    assert!(page.text().contains("swagger-ui"), "{}", page.text());
    let init = app.get("/docs/swagger-initializer.js");
    assert!(init.text().contains("\"/docs/openapi.json\""), "{}", init.text());
    assert_eq!(app.get("/docs/swagger-ui-bundle.js").status, 200);
    // The UI's copy of the document: the published one with a relative server, so "Try it
    // out" calls the page's own origin on any address and port.
    let ui = app.get("/docs/openapi.json").json();
    let published = app.get("/openapi.json").json();
    assert_eq!(
        ui["servers"],
        serde_json::json!([{"url": "/", "description": "The server this page came from."}])
    );
    assert_eq!(ui["paths"], published["paths"]);
    assert_eq!(published["servers"][0]["url"], "{baseUrl}", "generators keep the variable");
    let redirect = app.get("/docs");
    assert_eq!((redirect.status, redirect.header("location")), (308, Some("/docs/")));
}

#[test]
fn every_problem_type_has_a_page() {
    let app = spawn_app();
    for kind in wpds_contract::problem::ProblemCode::ALL {
        let page = app.get(&format!("/problems/{kind}"));
        assert_eq!(page.status, 200, "{kind}");
        assert!(page.text().contains(kind.title()));
    }
    let missing = app.get("/problems/no_such_problem");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["code"], Value::from("not_found"));
}

#[test]
fn the_conformance_kit_is_served_beside_the_document_file_by_file() {
    let app = spawn_app();
    let kit = concat!(env!("CARGO_MANIFEST_DIR"), "/conformance");

    let index = app.get("/conformance/index.json");

    assert_eq!(index.status, 200);
    assert_eq!(index.header("cache-control"), Some("no-cache"));
    assert_eq!(index.body, std::fs::read(format!("{kit}/index.json")).unwrap());
    let files: Vec<String> =
        index.json()["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_owned()).collect();
    // The repository's files published with the kit, by their name in it.
    let published = index.json()["publishedFrom"].as_object().unwrap().clone();
    assert!(
        published.contains_key("schemathesis.toml")
            && published.contains_key("released/1.0.0.client-cases.json")
    );
    let mut in_the_folder = Vec::new();
    files_under(std::path::Path::new(kit), std::path::Path::new(kit), &mut in_the_folder);
    let mut listed: Vec<&String> = files.iter().filter(|f| !published.contains_key(f.as_str())).collect();
    listed.sort();
    in_the_folder.sort();
    assert_eq!(
        listed,
        in_the_folder.iter().collect::<Vec<_>>(),
        "the index lists every file of the kit's folder"
    );
    for name in &files {
        let served = app.get(&format!("/conformance/{name}"));
        assert_eq!(served.status, 200, "{name}");
        assert_eq!(served.header("cache-control"), Some("no-cache"), "{name}");
        let source = match published.get(name) {
            Some(path) => format!("{}/{}", env!("CARGO_MANIFEST_DIR"), path.as_str().unwrap()),
            None => format!("{kit}/{name}"),
        };
        assert_eq!(served.body, std::fs::read(&source).unwrap(), "{name} is {source}");
    }
    for outside in ["/conformance/cases/noSuchOperation.json", "/conformance/../openapi/openapi.yaml"] {
        let unknown = app.get(outside);
        assert_eq!(unknown.status, 404, "{outside}");
        assert_eq!(unknown.json()["code"], "not_found", "{outside}");
    }
}

/// The files under `dir`, as paths relative to `root` with `/`, but the index, dot files
/// and Python's caches.
fn files_under(root: &std::path::Path, dir: &std::path::Path, files: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "__pycache__" {
            continue;
        }
        if path.is_dir() {
            files_under(root, &path, files);
        } else if path.strip_prefix(root).unwrap() != std::path::Path::new("index.json") {
            files.push(path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
        }
    }
}
