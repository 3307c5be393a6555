//! The layers of `src/`, bottom up, and a test that no module imports from a layer above its
//! own (docs/architecture.md, "Layers"). Test code may use any layer.

/// Top-level modules by layer, bottom up; modules on one line are peers.
const LAYERS: &[&[&str]] = &[
    &["api"],
    &["hook"],
    &["children", "keep"],
    &["secrets", "workload"],
    &["status"],
    &["sync"],
    &["server"],
    &["agent"],
    &["warm"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|peers| peers.contains(&module))
}

/// The identifier `s` starts with.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules `code` names with `crate::`, in order (`crate::{a, b}` names both).
fn imports(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            out.extend(group.split(',').map(|item| ident(item.trim())));
        } else {
            out.push(ident(rest));
        }
    }
    out
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.clone()];
    let mut upward = Vec::new();
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read src/") {
                files.push(entry.expect("entry").path());
            }
            continue;
        }
        let relative = path.strip_prefix(&src).expect("under src/");
        let top = relative
            .iter()
            .next()
            .and_then(|t| t.to_str())
            .unwrap_or("");
        let Some(own) = layer(top.trim_end_matches(".rs")) else {
            continue; // lib.rs, main.rs, cli: the shells, above every layer
        };
        let test_file = relative
            .iter()
            .any(|part| part == "tests" || part == "tests.rs");
        if test_file || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for import in imports(code) {
            if layer(import).is_some_and(|l| l > own) {
                upward.push(format!("{} imports crate::{import}", relative.display()));
            }
        }
    }
    upward.sort();
    assert!(upward.is_empty(), "imports from a layer above: {upward:#?}");
}

#[test]
fn grouped_imports_name_each_module() {
    assert_eq!(
        imports("use crate::{api, hook::Child};\nuse crate::sync::sync;"),
        ["api", "hook", "sync"]
    );
}
