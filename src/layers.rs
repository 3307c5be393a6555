//! The layers of `src/`, bottom up, and a test that no module imports from a layer above its
//! own (docs/architecture.md, "Layers"), nor any circle of imports between top-level modules
//! (peers and the shells included). Test code may use any layer. A file name is used once in
//! `src/`, unless it is an intended mirror listed in [`REPEATED_NAMES`] with its reason.

use std::collections::BTreeSet;

/// Top-level modules by layer, bottom up; modules on one line are peers.
const LAYERS: &[&[&str]] = &[
    &["process", "mounted", "http_client"],
    &["api"],
    &["hook"],
    &["children", "keep"],
    &["secrets", "workload"],
    &["status"],
    &["sync"],
    &["server", "pod"],
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

/// `text` without the items marked `#[cfg(test)]` (a `mod tests;` line or a braced item), so
/// that code after a test module is still read.
fn without_test_items(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        rest = &rest[at + MARK.len()..];
        rest = &rest[item_end(rest)..];
    }
    out.push_str(rest);
    out
}

/// The length of the item `code` starts with: up to its `;` or its closing brace, with
/// strings, character literals and comments skipped.
fn item_end(code: &str) -> usize {
    let bytes = code.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b';' if depth == 0 => return i + 1,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i += code[i..].find('\n').unwrap_or(code.len() - i);
                continue;
            }
            b'r' if matches!(bytes.get(i + 1), Some(b'"' | b'#'))
                && !bytes[..i]
                    .last()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') =>
            {
                let hashes = code[i + 1..].bytes().take_while(|b| *b == b'#').count();
                let open = i + 1 + hashes;
                if bytes.get(open) == Some(&b'"') {
                    let close = format!("\"{}", "#".repeat(hashes));
                    i = open
                        + 1
                        + code[open + 1..].find(&close).unwrap_or(code.len())
                        + close.len();
                    continue;
                }
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                i += code[i + 2..].find('\'').map_or(code.len() - i, |n| n + 2);
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// Each non-test source file under `src/`: its top-level module, its path under `src/` and
/// the top-level modules its code (without its `#[cfg(test)]` items) imports.
fn sources() -> Vec<(String, String, Vec<String>)> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.clone()];
    let mut out = Vec::new();
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
        let test_file = relative
            .iter()
            .any(|part| part == "tests" || part == "tests.rs");
        if test_file || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        let code = without_test_items(&text);
        let imports = imports(&code).into_iter().map(str::to_owned).collect();
        let top = top.trim_end_matches(".rs").to_owned();
        out.push((top, relative.display().to_string(), imports));
    }
    out
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let mut upward = Vec::new();
    for (top, relative, imports) in sources() {
        let Some(own) = layer(&top) else {
            continue; // lib.rs, main.rs, cli: the shells, above every layer
        };
        for import in imports {
            if layer(&import).is_some_and(|l| l > own) {
                upward.push(format!("{relative} imports crate::{import}"));
            }
        }
    }
    upward.sort();
    assert!(upward.is_empty(), "imports from a layer above: {upward:#?}");
}

/// A circle of imports among the top-level modules of `edges` (`(from, to)`), as the modules
/// in order with the first repeated at the end, or `None`.
fn circle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        edges: &BTreeSet<(String, String)>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == at) {
            let mut found = path[start..].to_vec();
            found.push(at.to_owned());
            return Some(found);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_owned());
        for (_, to) in edges.iter().filter(|(from, _)| from == at) {
            if let Some(found) = visit(to, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(at.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .iter()
        .find_map(|(from, _)| visit(from, edges, &mut Vec::new(), &mut done))
}

/// File names found more than once in `src/`, each with why (`tests.rs`, every module's tests
/// beside it, is not counted).
const REPEATED_NAMES: &[(&str, &str)] = &[
    // One block of the spec, read in `api/`, built into children in `children/`, reported in
    // `status/` or decoded from the wire in `hook/`: one name per block, wherever it is handled.
    (
        "discovery.rs",
        "spec.discovery: its rules and the children it builds",
    ),
    (
        "extstore.rs",
        "spec.extstore: its rules and the children it builds",
    ),
    (
        "service.rs",
        "spec.service: its rules and the Service it builds",
    ),
    (
        "service_monitor.rs",
        "the ServiceMonitor: its wire form and the child",
    ),
    (
        "warm_restart.rs",
        "spec.warmRestart: its rules, its children, its condition",
    ),
    ("zones.rs", "spec.zones: its rules, its plan, its condition"),
    (
        "pod.rs",
        "the pod: spec rules, the pod template, the pod programs",
    ),
    (
        "status.rs",
        "the status: its type in api/ and the module that computes it",
    ),
    (
        "pods.rs",
        "related pods: their wire form and what status reads of them",
    ),
    (
        "customize.rs",
        "the customize hook: its wire form and its answer",
    ),
    (
        "observed.rs",
        "observed children: their wire form and keeping one as observed",
    ),
    (
        "memcached.rs",
        "memcached: spec.memcached's rules and the program that runs it",
    ),
    (
        "auth_file.rs",
        "the auth-file step: its init container and its program",
    ),
    (
        "exporter.rs",
        "the stats exporter: its container and its program",
    ),
    (
        "reload_agent.rs",
        "the reload agent: its container and its program",
    ),
    ("error.rs", "each module's own error type"),
    (
        "metrics.rs",
        "each program's own metrics (the server, the reload agent)",
    ),
    (
        "args.rs",
        "a command line: memcached's (built) and the reload agent's (read)",
    ),
    (
        "check.rs",
        "a check: of the spec's fields, of the reload agent's files",
    ),
    (
        "fields.rs",
        "field paths: of the CRD's schema errors, of managed fields",
    ),
];

#[test]
fn no_file_name_repeats_unless_an_intended_mirror() {
    let mut seen = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (_, path, _) in sources() {
        let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
        seen.entry(name).or_default().push(path);
    }
    let repeated: Vec<(&String, &Vec<String>)> = seen
        .iter()
        .filter(|(name, paths)| paths.len() > 1 && !REPEATED_NAMES.iter().any(|(n, _)| n == name))
        .collect();
    assert!(
        repeated.is_empty(),
        "a file name used twice in src/ (rename it, or list it in REPEATED_NAMES with why): \
         {repeated:?}"
    );
    let stale: Vec<&str> = REPEATED_NAMES
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| seen.get(*n).is_none_or(|paths| paths.len() < 2))
        .collect();
    assert!(
        stale.is_empty(),
        "listed in REPEATED_NAMES but used once: {stale:?}"
    );
}

#[test]
fn no_import_circle_between_top_level_modules() {
    let edges: BTreeSet<(String, String)> = sources()
        .into_iter()
        .flat_map(|(top, _, imports)| imports.into_iter().map(move |i| (top.clone(), i)))
        .filter(|(from, to)| from != to)
        .collect();
    assert_eq!(
        circle(&edges),
        None,
        "an import circle between top-level modules"
    );
}

#[test]
fn a_circle_is_found_and_a_chain_is_not() {
    let edges = |pairs: &[(&str, &str)]| -> BTreeSet<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    };
    let chain = edges(&[("sync", "status"), ("status", "hook"), ("sync", "hook")]);
    assert_eq!(circle(&chain), None);
    let looped = edges(&[("children", "keep"), ("keep", "hook"), ("hook", "children")]);
    assert_eq!(
        circle(&looped),
        Some(vec![
            "children".into(),
            "keep".into(),
            "hook".into(),
            "children".into()
        ])
    );
}

#[test]
fn grouped_imports_name_each_module() {
    assert_eq!(
        imports("use crate::{api, hook::Child};\nuse crate::sync::sync;"),
        ["api", "hook", "sync"]
    );
}

#[test]
fn code_after_a_test_item_is_read() {
    let text = concat!(
        "use crate::api;\n#[cfg(test)]\nmod tests;\n",
        "#[cfg(test)]\nmod inline {\n    use crate::sync;\n    const S: &str = \"}\";\n",
        "    const C: char = '}';\n    const R: &str = r#\"}\"#;\n    // }\n}\n",
        "use crate::hook;\n",
    );
    let code = without_test_items(text);
    assert_eq!(imports(&code), ["api", "hook"], "{code}");
}
