//! Generates the client from the OpenAPI 3.0 document that scripts/check-sdks fetched from
//! the running server (`openapi-3.0.json` beside this file), as progenitor's README shows.

fn main() {
    let src = "openapi-3.0.json";
    println!("cargo:rerun-if-changed={src}");
    let file = std::fs::File::open(src).expect("openapi-3.0.json (fetched by scripts/check-sdks)");
    let spec = serde_json::from_reader(file).expect("an OpenAPI 3.0 document progenitor reads");
    let mut generator = progenitor::Generator::default();
    let tokens = generator.generate_tokens(&spec).expect("progenitor generates the client");
    let ast = syn::parse2(tokens).expect("the generated client parses");
    let out = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("codegen.rs");
    std::fs::write(out, prettyplease::unparse(&ast)).unwrap();
}
