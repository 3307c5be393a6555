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
        .skip_while(|l| !l.starts_with("# Not carried over"))
        .take_while(|l| l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("#   "))
        .map(|l| l.split(':').next().unwrap_or_default().to_owned())
        .collect()
}

/// `from-bitnami` on `values` (written to a file) for the release `shop-cache` of chart
/// `version`, with `extra` arguments: success, standard output, standard error.
fn convert(values: &str, version: &str, extra: &[&str]) -> (bool, String, String) {
    let dir = std::env::temp_dir().join(format!(
        "memcached-hook-bitnami-{}-{}",
        std::process::id(),
        values.len()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("values-{:x}.yaml", hash(values)));
    std::fs::write(&path, values).expect("write");
    let file = path.to_str().expect("utf-8").to_owned();
    let mut args = vec![
        "from-bitnami",
        &file,
        "--release",
        "shop",
        "--chart-version",
        version,
    ];
    args.extend_from_slice(extra);
    let out = run(&args, None);
    std::fs::remove_file(&path).ok();
    out
}

fn hash(text: &str) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// The Memcached (first object) of a conversion's output, as JSON.
fn memcached(output: &str) -> serde_json::Value {
    let doc = output.split("---\n").nth(1).expect("a Memcached");
    serde_saphyr::from_str(doc).expect("YAML")
}

/// `render` accepts the conversion: the hook's own validation of the spec.
fn renders(output: &str) -> String {
    let (ok, children, err) = run(&["render", "-"], Some(output));
    assert!(ok, "render refused the conversion: {err}\n{output}");
    children
}

#[test]
fn the_charts_values_convert_to_a_memcached_render_accepts() {
    // (fixture, values named as not carried over)
    let cases: &[(&str, &[&str])] = &[
        ("defaults", &[]),
        (
            "production",
            &["extraEnvVars.TZ", "image.registry", "service.type"],
        ),
        ("autoscaling", &[]),
    ];
    for (fixture, want) in cases {
        let path = format!("tests/fixtures/bitnami/{fixture}.yaml");
        let args = [
            "from-bitnami",
            &path,
            "--namespace",
            "shop",
            "--release",
            "shop",
            "--chart-version",
            "memcached-6.3.1",
        ];
        let (ok, out, err) = run(&args, None);
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
        let file = path.to_str().expect("utf-8");
        let args = [
            "from-bitnami",
            file,
            "--release",
            "r",
            "--chart-version",
            "7.4.1",
        ];
        let (ok, _, err) = run(&args, None);
        assert!(!ok, "{values}");
        assert!(err.contains(path.to_str().unwrap()), "{err}");
        assert!(err.contains(want), "{values}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_copy_of_each_generations_values_reports_nothing_and_sets_nothing() {
    for (generation, version) in [(6, "memcached-6.3.1"), (7, "7.4.1"), (8, "8.0.0")] {
        let path = format!("tests/fixtures/bitnami/chart-{generation}.yaml");
        let args = [
            "from-bitnami",
            &path,
            "--release",
            "shop",
            "--chart-version",
            version,
        ];
        let (ok, out, err) = run(&args, None);
        assert!(ok, "{generation}: {err}");
        assert_eq!(left_out(&out), Vec::<String>::new(), "{generation}: {out}");
        assert!(
            out.contains("# Every value set in the file carries over"),
            "{out}"
        );
        // Neither the chart's uid/gid 1001 contexts nor its requests nor its default budget.
        assert_eq!(
            memcached(&out)["spec"],
            serde_json::json!({}),
            "{generation}"
        );
        renders(&out);
    }
}

#[test]
fn only_what_the_user_changed_from_the_contexts_carries_over() {
    let values = "containerSecurityContext:\n  enabled: true\n  runAsUser: 1001\n  \
                  runAsNonRoot: true\n  readOnlyRootFilesystem: false\n\
                  podSecurityContext:\n  enabled: true\n  fsGroup: 1001\n";
    let (ok, out, err) = convert(values, "7.4.1", &[]);
    assert!(ok, "{err}");
    let security = &memcached(&out)["spec"]["security"];
    assert_eq!(
        *security,
        serde_json::json!({"containerSecurityContext": {"readOnlyRootFilesystem": false}}),
        "{out}"
    );
    renders(&out);
}

#[test]
fn a_budget_is_the_one_the_chart_rendered() {
    // (values, chart version, the budget)
    let cases = [
        // Chart 8 makes a budget by default, with maxUnavailable 1 when neither bound is set.
        (
            "architecture: high-availability\nreplicaCount: 1\n",
            "8.0.0",
            serde_json::json!({"enabled": true, "maxUnavailable": 1}),
        ),
        (
            "architecture: high-availability\npdb:\n  create: true\n  minAvailable: \"\"\n  \
             maxUnavailable: \"\"\n",
            "8.0.0",
            serde_json::json!({"enabled": true, "maxUnavailable": 1}),
        ),
        (
            "architecture: high-availability\npdb:\n  create: true\n",
            "6.3.1",
            serde_json::json!({"enabled": true, "maxUnavailable": 1}),
        ),
        (
            "architecture: high-availability\npdb:\n  create: true\n  minAvailable: 2\n",
            "7.4.1",
            serde_json::json!({"enabled": true, "minAvailable": 2}),
        ),
        (
            "architecture: high-availability\n",
            "7.4.1",
            serde_json::Value::Null,
        ),
    ];
    for (values, version, want) in cases {
        let (ok, out, err) = convert(values, version, &[]);
        assert!(ok, "{err}");
        let spec = &memcached(&out)["spec"];
        assert_eq!(
            spec["highAvailability"]["podDisruptionBudget"], want,
            "{version}: {values}"
        );
        let children = renders(&out);
        if want.is_object() {
            assert!(children.contains("kind: PodDisruptionBudget"), "{children}");
        }
    }
}

#[test]
fn persistence_presets_and_common_metadata_are_carried_or_named() {
    let values = "architecture: high-availability\nresourcesPreset: small\n\
                  persistence:\n  enabled: true\n  size: 8Gi\n\
                  commonLabels:\n  cost-center: shop\n  app.kubernetes.io/name: cache\n\
                  commonAnnotations:\n  owner: team-shop\n\
                  podLabels:\n  cost-center: web\n";
    let (ok, out, err) = convert(values, "7.4.1", &[]);
    assert!(ok, "{err}");
    let spec = &memcached(&out)["spec"];
    assert_eq!(spec["warmRestart"], serde_json::json!({"enabled": true}));
    assert_eq!(spec["resources"]["requests"]["cpu"], "500m");
    assert_eq!(spec["resources"]["limits"]["memory"], "768Mi");
    assert_eq!(spec["podLabels"], serde_json::json!({"cost-center": "web"}));
    // Every object and pod of the release carried them: so does every child of the Memcached.
    assert_eq!(
        spec["childMetadata"],
        serde_json::json!({"labels": {"cost-center": "shop"}, "annotations": {"owner": "team-shop"}})
    );
    assert_eq!(
        spec["podAnnotations"],
        serde_json::json!({"owner": "team-shop"})
    );
    assert_eq!(left_out(&out), ["commonLabels.app.kubernetes.io/name"]);
    renders(&out);
    // Without a StatefulSet the chart kept no memory file: named, not mapped.
    let (ok, out, err) = convert("persistence:\n  enabled: true\n", "6.3.1", &[]);
    assert!(ok, "{err}");
    assert_eq!(left_out(&out), ["persistence.enabled"]);
    // The chart library's presets: xlarge asks more than large, every limit 1024Mi of disk.
    let (ok, out, err) = convert("resourcesPreset: xlarge\n", "7.4.1", &[]);
    assert!(ok, "{err}");
    let resources = &memcached(&out)["spec"]["resources"];
    assert_eq!(
        resources,
        &serde_json::json!({
            "requests": {"cpu": "1500m", "memory": "4096Mi", "ephemeral-storage": "50Mi"},
            "limits": {"cpu": "3", "memory": "6144Mi", "ephemeral-storage": "1024Mi"}
        })
    );
    let (ok, _, err) = convert("resourcesPreset: huge\n", "7.4.1", &[]);
    assert!(!ok);
    assert!(err.contains("resourcesPreset: \"huge\""), "{err}");
}

#[test]
fn sasl_from_the_chart_warns_clients_and_never_asks_for_the_binary_protocol() {
    let values = "auth:\n  enabled: true\n  username: app\n  password: s3cret\n\
                  args:\n- /run.sh\n- -B binary\n- -S\n- -o modern\n";
    let (ok, out, err) = convert(values, "6.3.1", &[]);
    assert!(ok, "{err}");
    assert!(
        out.contains("WARNING: clients must change how they log in"),
        "{out}"
    );
    assert!(out.contains("ASCII"), "{out}");
    let spec = &memcached(&out)["spec"];
    assert_eq!(spec["security"]["sasl"]["enabled"], true);
    assert_eq!(
        spec["memcached"]["extraArgs"],
        serde_json::json!(["-o", "modern"])
    );
    assert_eq!(
        left_out(&out),
        ["memcached flag -B binary", "memcached flag -S"]
    );
    renders(&out);
    // Without SASL the protocol stays the user's choice.
    let (ok, out, err) = convert("args:\n- -B binary\n", "6.3.1", &[]);
    assert!(ok, "{err}");
    assert_eq!(
        memcached(&out)["spec"]["memcached"]["extraArgs"],
        serde_json::json!(["-B", "binary"])
    );
    assert!(!out.contains("WARNING"), "{out}");
}

#[test]
fn an_authenticated_release_never_becomes_an_open_cache() {
    // (values, the user in the Secret or the step, the Secret the step reads, if any)
    let cases = [
        // The image's default user when auth.username is empty.
        ("auth:\n  enabled: true\n  password: s3cret\n", "root", None),
        (
            "auth:\n  enabled: true\n  username: app\n  existingPasswordSecret: creds\n",
            "app",
            Some("creds"),
        ),
        // No password in the file: the chart generated one into its Secret <fullname>.
        (
            "auth:\n  enabled: true\n  username: app\n",
            "app",
            Some("shop-memcached"),
        ),
    ];
    for (values, user, from) in cases {
        let (ok, out, err) = convert(values, "7.4.1", &["--namespace", "web"]);
        assert!(ok, "{err}");
        let spec = &memcached(&out)["spec"];
        assert_eq!(
            spec["security"]["sasl"],
            serde_json::json!({"enabled": true,
                               "credentialsSecretRef": {"name": "shop-memcached-cache-sasl"}}),
            "{values}"
        );
        match from {
            None => {
                assert!(
                    out.contains(&format!("password-file: |\n    {user}:s3cret")),
                    "{out}"
                );
            }
            Some(secret) => {
                assert!(!out.contains("kind: Secret"), "{out}");
                let step = format!(
                    "kubectl -n web create secret generic shop-memcached-cache-sasl \
                     --from-literal=password-file=\"{user}:$(kubectl -n web get secret \
                     {secret} -o jsonpath='{{.data.memcached-password}}' | base64 -d)\""
                );
                assert!(out.contains(&step), "{out}");
            }
        }
        assert_eq!(left_out(&out), Vec::<String>::new(), "{values}");
        renders(&out);
    }
}

#[test]
fn the_memcached_cannot_take_the_release_s_names_or_pods() {
    // The default: the release's object name with -cache.
    let (ok, out, err) = convert("replicaCount: 2\n", "7.4.1", &[]);
    assert!(ok, "{err}");
    assert_eq!(memcached(&out)["metadata"]["name"], "shop-memcached-cache");
    assert!(out.contains("runs beside the release shop"), "{out}");
    let children = renders(&out);
    assert!(
        !children.contains("app.kubernetes.io/instance: shop\n"),
        "{children}"
    );
    let (ok, out, err) = convert("fullnameOverride: sessions\n", "7.4.1", &[]);
    assert!(ok, "{err}");
    assert_eq!(memcached(&out)["metadata"]["name"], "sessions-cache");
    // (--name, what the error names)
    let cases = [
        (
            "shop-memcached",
            "would take the name of the release shop's own",
        ),
        ("shop-memcached-metrics", "would take the name"),
        ("shop", "which the release shop's Service and budget select"),
    ];
    for (name, want) in cases {
        let (ok, _, err) = convert("{}\n", "7.4.1", &["--name", name]);
        assert!(!ok, "{name}");
        assert!(err.contains(want), "{name}: {err}");
    }
    // Another app.kubernetes.io/name on the release's pods: the release's name is free.
    let (ok, _, err) = convert("nameOverride: sessions\n", "7.4.1", &["--name", "shop"]);
    assert!(ok, "{err}");
    // The release and the chart version are required.
    let (ok, _, err) = run(
        &["from-bitnami", "tests/fixtures/bitnami/defaults.yaml"],
        None,
    );
    assert!(!ok);
    assert!(
        err.contains("--release") && err.contains("--chart-version"),
        "{err}"
    );
    let (ok, _, err) = convert("{}\n", "5.1.0", &[]);
    assert!(!ok);
    assert!(
        err.contains("generations known are 6.x, 7.x and 8.x"),
        "{err}"
    );
}
