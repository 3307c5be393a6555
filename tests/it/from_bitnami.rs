//! `memcached-hook from-bitnami`: the chart's documented values become a Memcached that `render`
//! accepts, what has no counterpart is named, and a value it cannot read is an error.

use std::io::Write as _;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_memcached-hook");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn run(args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(ROOT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or_default().as_bytes())
        .expect("write stdin");
    drop(input);
    let out = child.wait_with_output().expect("binary ends");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `# Not carried over` lines of an output: the value paths.
fn left_out(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix("#   "))
        .map(|l| l.split(':').next().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn the_charts_values_convert_to_a_memcached_render_accepts() {
    // (fixture, values named as not carried over)
    let cases: &[(&str, &[&str])] = &[
        ("defaults", &[]),
        (
            "production",
            &[
                "extraEnvVars.TZ",
                "image.registry",
                "image.tag",
                "persistence.enabled",
                "persistence.size",
                "service.type",
            ],
        ),
        ("autoscaling", &["auth.existingPasswordSecret"]),
    ];
    for (fixture, want) in cases {
        let path = format!("tests/fixtures/bitnami/{fixture}.yaml");
        let (ok, out, err) = run(&["from-bitnami", &path, "--namespace", "shop"], None);
        assert!(ok, "{fixture}: {err}");
        assert_eq!(left_out(&out), *want, "{fixture}");
        insta::assert_snapshot!(format!("from_bitnami_{fixture}"), out);
        let (ok, children, err) = run(&["render", "-"], Some(&out));
        assert!(ok, "{fixture}: render refused the conversion: {err}");
        assert!(children.contains("kind: Service"), "{fixture}");
    }
}

#[test]
fn values_it_cannot_read_are_errors_naming_the_file_and_the_value() {
    let dir = std::env::temp_dir().join(format!("memcached-hook-bitnami-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cases = [
        (
            "replicaCount: many\n",
            "replicaCount: \"many\" is not a whole number",
        ),
        (
            "architecture: cluster\n",
            "architecture: \"cluster\" is neither",
        ),
        (
            "args: [\"-m\", \"lots\"]\n",
            "memcached flag -m lots: not a whole number",
        ),
        (
            "extraEnvVars: [{name: MEMCACHED_MAX_ITEM_SIZE, value: \"1000\"}]\n",
            "not a whole number of KiB",
        ),
        ("- a list\n", "not a values file"),
    ];
    for (i, (values, want)) in cases.iter().enumerate() {
        let path = dir.join(format!("values-{i}.yaml"));
        std::fs::write(&path, values).expect("write");
        let (ok, _, err) = run(&["from-bitnami", path.to_str().expect("utf-8")], None);
        assert!(!ok, "{values}");
        assert!(err.contains(path.to_str().unwrap()), "{err}");
        assert!(err.contains(want), "{values}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
