//! Derives a build id from the sources, so that a sync answer's ETag changes whenever the code
//! that computes the answer changes (Metacontroller would otherwise reuse an old answer).

use std::hash::{DefaultHasher, Hasher};
use std::path::Path;
use std::{env, fs};

fn visit(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            visit(&path, files);
        } else {
            files.push(path);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("Cargo.lock"), root.join("Cargo.toml")];
    visit(&root.join("src"), &mut files);
    files.sort();
    let mut hasher = DefaultHasher::new();
    for file in &files {
        if let Ok(relative) = file.strip_prefix(root) {
            hasher.write(relative.to_string_lossy().as_bytes());
        }
        hasher.write(&fs::read(file).unwrap_or_default());
    }
    println!(
        "cargo:rustc-env=MEMCACHED_HOOK_BUILD_ID={}-{:016x}",
        env!("CARGO_PKG_VERSION"),
        hasher.finish()
    );
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=Cargo.toml");
    // Set by .cargo/config.toml: a build from another checkout of the same sources, into the
    // same target directory, rebuilds this crate instead of passing for fresh.
    println!("cargo:rerun-if-env-changed=MEMCACHED_HOOK_CHECKOUT");
}
