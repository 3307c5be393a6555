//! The binary: `crd` matches the checked-in CRD, `render` prints the seeds' objects, `replay`
//! runs fixtures, errors name the file and the field.

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceSubresourceScale, CustomResourceSubresourceStatus,
    CustomResourceSubresources,
};
use serde_json::Value;

use crate::common::strict;

const BIN: &str = env!("CARGO_BIN_EXE_memcached-hook");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn yaml_documents(text: &str) -> Vec<Value> {
    serde_saphyr::from_str_multiple::<Value, Vec<Value>>(text)
        .expect("YAML")
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

#[test]
fn golden_files_crd_matches_the_generated_one() {
    let (ok, generated, err) = run(&["crd"]);
    assert!(ok, "{err}");
    // Stale files: `UPDATE_EXPECT=1 cargo test --test it golden_files` rewrites them.
    expect_test::expect_file!["../../deploy/crd/crd.yaml"].assert_eq(&generated);
    expect_test::expect_file!["../../charts/memcached-hook/crds/memcacheds.memcached.c5c3.io.yaml"]
        .assert_eq(&generated);
    let crd: CustomResourceDefinition = strict(&yaml_documents(&generated)[0]);
    let versions = crd.spec.versions;
    assert_eq!(versions.len(), 2);
    let (alpha, beta) = (&versions[0], &versions[1]);
    assert_eq!(
        (alpha.name.as_str(), alpha.storage, alpha.served),
        ("v1alpha1", false, true)
    );
    assert_eq!(
        (beta.name.as_str(), beta.storage, beta.served),
        ("v1beta1", true, true)
    );
    assert_eq!(alpha.schema, beta.schema, "identical schemas");
    // Both versions: `kubectl scale` and autoscalers may name either.
    for version in [alpha, beta] {
        assert_eq!(
            version.subresources,
            Some(CustomResourceSubresources {
                status: Some(CustomResourceSubresourceStatus(serde_json::json!({}))),
                scale: Some(CustomResourceSubresourceScale {
                    spec_replicas_path: ".spec.replicas".to_owned(),
                    status_replicas_path: ".status.replicas".to_owned(),
                    label_selector_path: Some(".status.selector".to_owned()),
                }),
            })
        );
    }
    let columns: Vec<&str> = (beta.additional_printer_columns.iter().flatten())
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        columns,
        [
            "Pods", "Ready", "Zones", "Proxy", "Status", "UpToDate", "Age"
        ]
    );
    let schema = beta
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref());
    let status = schema
        .and_then(|s| s.properties.as_ref()?.get("status")?.properties.as_ref())
        .expect("a status schema with properties");
    assert!(status.contains_key("observedGeneration"));
}

/// Drops what Metacontroller adds to a child (namespace, owner references).
fn strip_metacontroller_fields(mut object: Value) -> Value {
    if let Some(meta) = object["metadata"].as_object_mut() {
        meta.remove("namespace");
        meta.remove("ownerReferences");
    }
    object
}

#[test]
fn render_prints_the_seeds_expected_objects() {
    let dir = Path::new(ROOT).join("tests/fixtures/cr");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("dir") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if !name.starts_with("seed-") || name.ends_with(".expected.yaml") {
            continue;
        }
        let (ok, out, err) = run(&["render", path.to_str().expect("utf-8")]);
        assert!(ok, "{name}: {err}");
        let rendered = yaml_documents(&out);
        let expected_path = path.with_extension("expected.yaml");
        let expected =
            yaml_documents(&std::fs::read_to_string(&expected_path).expect("expected file"));
        for want in expected {
            let want = strip_metacontroller_fields(want);
            let got = rendered
                .iter()
                .find(|o| o["kind"] == want["kind"])
                .unwrap_or_else(|| panic!("{name}: no {}", want["kind"]));
            assert_eq!(got, &want, "{name}");
        }
        if name == "seed-pdb-disabled.yaml" {
            assert!(
                rendered.iter().all(|o| o["kind"] != "PodDisruptionBudget"),
                "{name}: no PDB"
            );
        }
        assert!(
            rendered.iter().any(|o| o["kind"] == "Deployment")
                && rendered.iter().any(|o| o["kind"] == "Service")
        );
        checked += 1;
    }
    assert_eq!(checked, 7);
}

#[test]
fn render_of_a_statefulset_sample_prints_a_statefulset_and_no_deployment() {
    let (ok, out, err) = run(&["render", "config/samples/statefulset.yaml"]);
    assert!(ok, "{err}");
    let rendered = yaml_documents(&out);
    let kinds: Vec<&str> = rendered.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert!(kinds.contains(&"StatefulSet"), "{kinds:?}");
    assert!(!kinds.contains(&"Deployment"), "{kinds:?}");
    let set: StatefulSet = strict(
        rendered
            .iter()
            .find(|o| o["kind"] == "StatefulSet")
            .expect("StatefulSet"),
    );
    assert_eq!(set.metadata.name.as_deref(), Some("cache-sts"));
    let spec = set.spec.expect("spec");
    assert_eq!(spec.service_name.as_deref(), Some("cache-sts"));
    assert_eq!(spec.pod_management_policy.as_deref(), Some("Parallel"));
    assert!(spec.volume_claim_templates.is_none());
}

#[test]
fn replay_prints_the_response_as_json_or_the_children_as_yaml() {
    let fixture = "tests/fixtures/sync/steady-state.json";
    let (ok, out, err) = run(&["replay", fixture, "--now", "2026-11-22T12:00:00Z"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["children"].as_array().map(Vec::len), Some(3));
    let (ok, out, err) = run(&[
        "replay",
        fixture,
        "--output",
        "yaml",
        "--now",
        "2026-11-22T12:00:00Z",
    ]);
    assert!(ok, "{err}");
    let kinds: Vec<Value> = yaml_documents(&out)
        .into_iter()
        .map(|d| d["kind"].clone())
        .collect();
    assert_eq!(kinds, ["Deployment", "Service", "PodDisruptionBudget"]);
    // Kept children (invalid spec) come out as objects too, equal to the JSON answer's.
    let kept = "tests/fixtures/sync/invalid-spec-keeps-children.json";
    let (ok, json_out, err) = run(&["replay", kept, "--now", "2026-11-22T12:00:00Z"]);
    assert!(ok, "{err}");
    let (ok, yaml_out, err) = run(&[
        "replay",
        kept,
        "--output",
        "yaml",
        "--now",
        "2026-11-22T12:00:00Z",
    ]);
    assert!(ok, "{err}");
    let from_json: Value = serde_json::from_str(&json_out).expect("json");
    assert_eq!(
        Value::Array(yaml_documents(&yaml_out)),
        from_json["children"]
    );
}

#[test]
fn errors_name_the_file_and_the_field_and_exit_non_zero() {
    let dir = std::env::temp_dir().join(format!("memcached-hook-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad_type = dir.join("bad-type.yaml");
    std::fs::write(&bad_type, "apiVersion: memcached.c5c3.io/v1beta1\nkind: Memcached\nmetadata: {name: c}\nspec: {replicas: many}\n").expect("write");
    let (ok, _, err) = run(&["render", bad_type.to_str().expect("utf-8")]);
    assert!(!ok);
    assert!(
        err.contains("bad-type.yaml") && err.contains("spec.replicas"),
        "{err}"
    );
    let invalid = dir.join("invalid.yaml");
    std::fs::write(&invalid, "apiVersion: memcached.c5c3.io/v1beta1\nkind: Memcached\nmetadata: {name: c}\nspec: {replicas: 100}\n").expect("write");
    let (ok, _, err) = run(&["render", invalid.to_str().expect("utf-8")]);
    assert!(!ok);
    assert!(
        err.contains("invalid.yaml") && err.contains("spec.replicas") && err.contains("64"),
        "{err}"
    );
    let (ok, _, err) = run(&["replay", dir.join("missing.json").to_str().expect("utf-8")]);
    assert!(!ok && err.contains("missing.json"), "{err}");
    let not_json = dir.join("request.json");
    std::fs::write(&not_json, "{\"parent\": 1}").expect("write");
    let (ok, _, err) = run(&["replay", not_json.to_str().expect("utf-8")]);
    assert!(
        !ok && err.contains("request.json") && err.contains("parent"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Writes `files` into a fresh directory and runs the binary there with `args`.
fn run_in(files: &[(&str, &str)], args: &[&str]) -> (bool, String, String) {
    let dir = std::env::temp_dir().join(format!(
        "memcached-hook-cli-{}-{}",
        std::process::id(),
        args.join("-").replace(['/', '.'], "_")
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write");
    }
    let out = Command::new(BIN)
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("binary runs");
    std::fs::remove_dir_all(&dir).ok();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const HEAD: &str = "apiVersion: memcached.c5c3.io/v1beta1\nkind: Memcached\nmetadata:\n  name: c\n";

#[test]
fn render_refuses_an_unknown_field_with_the_closest_known_name() {
    let typo = format!("{HEAD}spec:\n  replica: 3\n");
    let (ok, out, err) = run_in(&[("typo.yaml", &typo)], &["render", "typo.yaml"]);
    assert!(!ok && out.is_empty(), "{out}");
    insta::assert_snapshot!(err, @r#"error: typo.yaml, document 1: Memcached "c" is invalid: spec.replica: unknown field "replica"; did you mean "replicas"?"#);
}

/// The saved first sync of a Memcached, to change before a replay.
fn first_sync_request() -> Value {
    let path = Path::new(ROOT).join("tests/fixtures/sync/first-sync.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json")
}

#[test]
fn replay_ignores_unknown_fields_like_sync() {
    let mut request = first_sync_request();
    request["parent"]["spec"]["replica"] = Value::from(3);
    let request = request.to_string();
    let (ok, out, err) = run_in(&[("request.json", &request)], &["replay", "request.json"]);
    assert!(ok, "{err}");
    assert!(out.contains("\"children\""), "{out}");
}

#[test]
fn render_errors_name_the_document_the_field_and_the_problem_in_kubernetes_terms() {
    let two = format!(
        "{HEAD}spec: {{}}\n---\n{}spec:\n  replicas: many\n  tolerations:\n  - operater: Exists\n",
        HEAD.replace("Memcached", "Memcache")
    );
    let (ok, _, err) = run_in(&[("two.yaml", &two)], &["render", "two.yaml"]);
    assert!(!ok);
    insta::assert_snapshot!(err, @r#"
error: two.yaml, document 2: Memcached "c" is invalid:
* kind: Unsupported value: "Memcache": supported values: "Memcached"
* spec.replicas: Invalid value: "many": must be of type integer
* spec.tolerations[0].operater: unknown field "operater"; did you mean "operator"?
"#);
    let float = format!("{HEAD}spec: {{}}\n---\n{HEAD}spec:\n  replicas: 3.5\n");
    let (ok, _, err) = run_in(&[("float.yaml", &float)], &["render", "float.yaml"]);
    assert!(!ok);
    insta::assert_snapshot!(err, @r#"error: float.yaml, document 2: Memcached "c" is invalid: spec.replicas: Invalid value: 3.5: must be of type integer"#);
    let (ok, _, err) = run_in(&[("list.yaml", "- a\n")], &["render", "list.yaml"]);
    assert!(!ok);
    insta::assert_snapshot!(err, @"error: list.yaml, document 1: not a Memcached object (a mapping with apiVersion, kind, metadata and spec)");
    let twice = format!("{HEAD}spec: {{}}\nspec: {{}}\n");
    let (ok, _, err) = run_in(&[("twice.yaml", &twice)], &["render", "twice.yaml"]);
    assert!(!ok);
    assert!(
        err.contains("twice.yaml: not YAML")
            && err.contains("line 6 column 1: duplicate mapping key: spec\n"),
        "{err}"
    );
    let rule = format!("{HEAD}spec:\n  replicas: 100\n  memcached:\n    maxMemoryMB: 8\n");
    let (ok, _, err) = run_in(&[("rule.yaml", &rule)], &["render", "rule.yaml"]);
    assert!(!ok);
    insta::assert_snapshot!(err, @r#"
error: rule.yaml, document 1: Memcached "c" is invalid:
* spec.memcached.maxMemoryMB: Invalid value: 8: should be greater than or equal to 16
* spec.replicas: Invalid value: 100: should be less than or equal to 64
"#);
}

#[test]
fn replay_names_a_wrong_kind_and_a_wrong_type_as_the_api_server_would() {
    let mut request = first_sync_request();
    request["parent"]["spec"]["replicas"] = Value::from("three");
    let (ok, _, err) = run_in(&[("r.json", &request.to_string())], &["replay", "r.json"]);
    assert!(!ok);
    insta::assert_snapshot!(err, @r#"error: r.json: Memcached "cache" is invalid: parent.spec.replicas: Invalid value: "three": must be of type integer"#);
    request["parent"]["spec"]["replicas"] = Value::from(3);
    request["parent"]["kind"] = Value::from("Memcache");
    let (ok, _, err) = run_in(&[("r.json", &request.to_string())], &["replay", "r.json"]);
    assert!(!ok);
    insta::assert_snapshot!(err, @r#"error: r.json: Memcached "cache" is invalid: parent.kind: Unsupported value: "Memcache": supported values: "Memcached""#);
}

#[test]
fn render_and_replay_stop_reading_an_endless_input_at_the_bound() {
    for command in ["render", "replay"] {
        let (ok, _, err) = run(&[command, "/dev/zero"]);
        assert!(!ok, "{command}");
        assert!(
            err.contains("/dev/zero: larger than 16777216 bytes"),
            "{command}: {err}"
        );
    }
}

/// A `serve` on a free loopback port, killed (by its PID) when dropped.
struct Server {
    child: std::process::Child,
    port: u16,
}

impl Server {
    fn start(args: &[&str]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = Command::new(BIN)
            .arg("serve")
            .args(["--addr", &format!("127.0.0.1:{port}")])
            .args(args)
            .current_dir(ROOT)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("binary runs");
        Self { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn probe_gets_readyz_over_http_and_fails_on_another_answer() {
    let server = Server::start(&[]);
    let url = format!("http://127.0.0.1:{}", server.port);
    let (ok, out, err) = run(&["probe", &format!("{url}/readyz"), "--attempts", "10"]);
    assert!(ok, "{err}");
    assert_eq!(out, format!("GET {url}/readyz: HTTP/1.1 200 OK\n"));
    let (ok, _, err) = run(&["probe", &format!("{url}/missing")]);
    assert!(!ok);
    assert!(err.contains("answered HTTP/1.1 404"), "{err}");
    drop(server);
    let (ok, _, err) = run(&["probe", &format!("{url}/readyz")]);
    assert!(!ok && err.contains("connecting to 127.0.0.1"), "{err}");
}

#[test]
fn probe_checks_the_server_certificate_against_its_ca_file() {
    let pki = crate::secure::Pki::new("probe test CA");
    let (cert, key) = pki.leaf(&["localhost", "127.0.0.1"]);
    let other = crate::secure::Pki::new("another CA");
    let dir = std::env::temp_dir().join(format!("memcached-hook-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("utf-8").to_owned()
    };
    let (cert, key) = (file("tls.crt", &cert), file("tls.key", &key));
    let (ca, other_ca) = (
        file("ca.crt", &pki.ca_pem),
        file("other.crt", &other.ca_pem),
    );
    let server = Server::start(&["--tls-cert-file", &cert, "--tls-key-file", &key]);
    let url = format!("https://localhost:{}/readyz", server.port);
    let (ok, out, err) = run(&["probe", &url, "--ca-file", &ca, "--attempts", "10"]);
    assert!(ok && out.contains("200 OK"), "{out}{err}");
    let (ok, _, err) = run(&["probe", &url, "--ca-file", &other_ca]);
    assert!(
        !ok && err.contains("TLS handshake") && err.contains("invalid peer certificate"),
        "{err}"
    );
    let (ok, _, err) = run(&["probe", &url]);
    assert!(!ok && err.contains("https needs --ca-file"), "{err}");
    drop(server);
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs `serve` with `args` and `env`, expecting it to refuse them before it listens; a server
/// that starts anyway (on loopback only) is killed by its PID after 5 s and the test fails.
fn serve_refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(["--addr", "127.0.0.1:0"])
        .args(args)
        .envs(env.iter().copied())
        .current_dir(ROOT)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("binary runs");
    for _ in 0..100 {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().expect("stderr piped"), &mut err)
                .expect("stderr");
            assert!(!status.success(), "{args:?} {env:?}: exit 0");
            return err;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().expect("kill the server this test started");
    let _ = child.wait();
    panic!("{args:?} {env:?}: serve started instead of refusing");
}

#[test]
fn a_connection_limit_of_zero_is_refused() {
    let err = serve_refused(&["--max-connections", "0"], &[]);
    assert!(err.contains("--max-connections"), "{err}");
    let err = serve_refused(&[], &[("MEMCACHED_HOOK_MAX_CONNECTIONS", "0")]);
    assert!(err.contains("--max-connections"), "{err}");
}

#[test]
fn render_reads_standard_input_the_items_of_a_list_and_passes_over_other_kinds() {
    use std::io::Write as _;
    let mut child = Command::new(BIN)
        .args(["render", "-"])
        .current_dir(ROOT)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("binary runs");
    let text = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n---\n{HEAD}spec: {{}}\n"
    );
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("written");
    let out = child.wait_with_output().expect("ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = yaml_documents(&String::from_utf8_lossy(&out.stdout));
    let names: Vec<(&str, &str)> = rendered
        .iter()
        .filter_map(|o| Some((o["kind"].as_str()?, o["metadata"]["name"].as_str()?)))
        .collect();
    assert!(names.contains(&("Deployment", "c")), "{names:?}");
    assert!(
        !names.iter().any(|(kind, _)| *kind == "Namespace"),
        "{names:?}"
    );

    let list = concat!(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: s\n",
        "- apiVersion: memcached.c5c3.io/v1beta1\n  kind: Memcached\n  metadata:\n    name: listed\n  spec:\n    replicas: 2\n"
    );
    let (ok, out, err) = run_in(&[("list.yaml", list)], &["render", "list.yaml"]);
    assert!(ok, "{err}");
    let rendered = yaml_documents(&out);
    assert!(
        rendered
            .iter()
            .any(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "listed"),
        "{out}"
    );
    let bad = list.replace("replicas: 2", "replicas: -1");
    let (ok, _, err) = run_in(&[("list.yaml", &bad)], &["render", "list.yaml"]);
    assert!(!ok);
    insta::assert_snapshot!(err, @r#"error: list.yaml, document 1, items[1]: Memcached "listed" is invalid: spec.replicas: Invalid value: -1: should be greater than or equal to 0"#);

    let other = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\n";
    let (ok, _, err) = run_in(&[("other.yaml", other)], &["render", "other.yaml"]);
    assert!(!ok);
    insta::assert_snapshot!(err, @"error: other.yaml: no Memcached object in the file");
}

#[test]
fn render_refuses_what_the_crd_bounds_refuse() {
    let zeros = format!(
        "{HEAD}spec:\n  memcached:\n    maxMemoryMB: 0\n    threads: 0\n    maxConnections: 0\n"
    );
    let (ok, out, err) = run_in(&[("zeros.yaml", &zeros)], &["render", "zeros.yaml"]);
    assert!(!ok && out.is_empty(), "{out}");
    insta::assert_snapshot!(err, @r#"
error: zeros.yaml, document 1: Memcached "c" is invalid:
* spec.memcached.maxConnections: Invalid value: 0: should be greater than or equal to 1
* spec.memcached.maxMemoryMB: Invalid value: 0: should be greater than or equal to 16
* spec.memcached.threads: Invalid value: 0: should be greater than or equal to 1
"#);
}

#[test]
fn replay_given_yaml_points_at_render() {
    let yaml = format!("{HEAD}spec: {{}}\n");
    let (ok, _, err) = run_in(&[("cache.yaml", &yaml)], &["replay", "cache.yaml"]);
    assert!(!ok);
    insta::assert_snapshot!(err, @"error: cache.yaml: not a sync request: replay reads the JSON body Metacontroller POSTs to /sync; for the children of the Memcached objects in a YAML file, run `memcached-hook render cache.yaml`");
}

#[test]
fn an_empty_or_malformed_default_image_is_refused_by_name() {
    let err = serve_refused(&["--default-image", ""], &[]);
    assert!(
        err.contains("--default-image") && err.contains("empty"),
        "{err}"
    );
    let env = [("MEMCACHED_HOOK_DEFAULT_EXPORTER_IMAGE", " exporter:1")];
    let err = serve_refused(&[], &env);
    assert!(
        err.contains("--default-exporter-image") && err.contains("whitespace"),
        "{err}"
    );
    let long = "m".repeat(1025);
    let err = serve_refused(&["--default-image", &long], &[]);
    assert!(err.contains("at most 1024 characters"), "{err}");
}

#[test]
fn render_gives_a_memcached_without_images_the_hook_s_defaults() {
    let memcached = format!("{HEAD}spec:\n  monitoring:\n    enabled: true\n");
    let images = |out: &str| -> Vec<String> {
        yaml_documents(out)
            .iter()
            .filter_map(|d| d.pointer("/spec/template/spec/containers"))
            .flat_map(|c| c.as_array().cloned().unwrap_or_default())
            .filter_map(|c| c["image"].as_str().map(str::to_owned))
            .collect()
    };
    let (ok, out, err) = run_in(&[("m.yaml", &memcached)], &["render", "m.yaml"]);
    assert!(ok, "{err}");
    let built_in = ["memcached:1.6.45", "prom/memcached-exporter:v0.15.4"];
    assert_eq!(images(&out), built_in);
    let mirror = [
        "--default-image",
        "mirror.example/library/memcached:1.6.45",
        "--default-exporter-image",
        "mirror.example/prom/memcached-exporter:v0.15.4",
    ];
    let args = [&["render", "m.yaml"][..], &mirror[..]].concat();
    let (ok, out, err) = run_in(&[("m.yaml", &memcached)], &args);
    assert!(ok, "{err}");
    assert_eq!(images(&out), [mirror[1], mirror[3]]);
}
