//! `spec.extstore`: the pod it renders (the `-o` option, the volume and its mount, the memory
//! request, `fsGroup`) and the specs it refuses, each with memcached's own reason.

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::{Value, json};

use memcached_hook::SyncError;
use memcached_hook::hook::Received;

use crate::common::{now, render, request_json, typed};

/// What extstore changes in the pod of `spec`: memcached's arguments, resources and mounts,
/// the volumes and the pod security context.
fn pod_view(spec: Value) -> Value {
    let deployment = typed::<Deployment>(&render(spec));
    let pod = deployment.spec.expect("spec").template.spec.expect("pod");
    let memcached = pod
        .containers
        .iter()
        .find(|c| c.name == "memcached")
        .expect("memcached");
    json!({
        "args": memcached.args,
        "resources": memcached.resources,
        "volumeMounts": memcached.volume_mounts,
        "volumes": pod.volumes,
        "securityContext": pod.security_context,
    })
}

#[test]
fn rendered_pods() {
    let cases = [
        ("ephemeral_1gi", json!({"enabled": true, "size": "1Gi"})),
        (
            "ephemeral_class",
            json!({"enabled": true, "size": "10Gi", "storageClassName": "local-nvme"}),
        ),
        (
            "empty_dir_512mi",
            json!({"enabled": true, "size": "512Mi", "volume": "EmptyDir"}),
        ),
        (
            "every_tuning_field",
            json!({"enabled": true, "size": "2Gi", "pageSizeMB": 32, "writeBufferSizeMB": 8,
                   "threads": 2, "itemSizeBytes": 1024, "itemAgeSeconds": 3600,
                   "lowTtlSeconds": 60, "recacheRate": 100, "compactUnderPages": 8,
                   "dropUnderPages": 4, "maxFrag": 0.5}),
        ),
        ("disabled", json!({"enabled": false, "size": "1Gi"})),
    ];
    for (name, extstore) in cases {
        insta::assert_yaml_snapshot!(name, pod_view(json!({"extstore": extstore})));
    }
}

#[test]
fn large_items_with_a_matching_write_buffer_render() {
    let view = pod_view(json!({"memcached": {"maxItemSize": "32m"},
                               "extstore": {"enabled": true, "size": "4Gi",
                                            "writeBufferSizeMB": 32}}));
    let args: Vec<String> = serde_json::from_value(view["args"].clone()).expect("args");
    assert!(args.windows(2).any(|w| w == ["-I", "32m"]), "{args:?}");
    assert_eq!(
        args.last().map(String::as_str),
        Some("ext_wbuf_size=32,ext_path=/data/extstore:4096m")
    );
}

#[test]
fn a_spec_memory_request_is_kept() {
    let view = pod_view(json!({"resources": {"requests": {"memory": "1Gi"}},
                               "extstore": {"enabled": true, "size": "1Gi"}}));
    assert_eq!(view["resources"], json!({"requests": {"memory": "1Gi"}}));
}

#[test]
fn a_spec_fs_group_is_kept() {
    let view = pod_view(
        json!({"security": {"podSecurityContext": {"fsGroup": 2000}},
                               "extstore": {"enabled": true, "size": "1Gi"}}),
    );
    assert_eq!(view["securityContext"]["fsGroup"], 2000);
}

/// The violations of a Memcached with `spec`, as the status shows them (and the hook answers).
pub(crate) fn refused(spec: Value) -> Vec<String> {
    let typed: memcached_hook::api::MemcachedSpec =
        serde_json::from_value(spec.clone()).expect("spec");
    let shown: Vec<String> = memcached_hook::api::validation::validate("cache", &typed)
        .iter()
        .map(ToString::to_string)
        .collect();
    let body = serde_json::to_vec(&request_json(spec)).expect("encodes");
    let received = Received::decode(body).expect("a well-formed request");
    match memcached_hook::sync(&received, now(), &memcached_hook::Options::default()) {
        Err(SyncError::InvalidSpec { violations, .. }) => {
            let answered: Vec<String> = violations.iter().map(ToString::to_string).collect();
            assert_eq!(answered, shown, "the hook answers what validation finds");
        }
        Ok(_) => assert!(shown.is_empty(), "accepted although {shown:?}"),
        Err(e) => panic!("{e}"),
    }
    shown
}

#[test]
fn refusals() {
    let on = |extra: Value| {
        let mut x = json!({"enabled": true, "size": "1Gi"});
        for (k, v) in extra.as_object().expect("object") {
            x[k] = v.clone();
        }
        json!({"extstore": x})
    };
    let with = |mut spec: Value, key: &str, value: Value| {
        spec[key] = value;
        spec
    };
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "no size",
            json!({"extstore": {"enabled": true}}),
            vec![
                "spec.extstore.size: Required value: extstore.size is required when extstore.enabled is true",
            ],
        ),
        (
            "below four pages",
            on(json!({"size": "255Mi"})),
            vec![
                "spec.extstore.size: Invalid value: \"255Mi\": must be at least 256Mi (4 pages of pageSizeMB 64): memcached never writes its first page and keeps one open per page bucket, so a smaller file holds next to nothing",
            ],
        ),
        (
            "zero",
            on(json!({"size": "0G"})),
            vec![
                "spec.extstore.size: Invalid value: \"0G\": must be greater than 0",
                "spec.extstore.size: Invalid value: \"0G\": must be at least 256Mi (4 pages of pageSizeMB 64): memcached never writes its first page and keeps one open per page bucket, so a smaller file holds next to nothing",
            ],
        ),
        (
            "too many pages",
            on(json!({"size": "64Ti", "pageSizeMB": 2, "writeBufferSizeMB": 2})),
            vec![
                "spec.extstore.size: Invalid value: \"64Ti\": must be at most 65534 pages of pageSizeMB 2: memcached refuses 65535 pages or more (a larger pageSizeMB makes fewer pages)",
            ],
        ),
        (
            "odd page size",
            on(json!({"pageSizeMB": 63})),
            vec![
                "spec.extstore.pageSizeMB: Invalid value: 63: must be a multiple of 2",
                "spec.extstore.writeBufferSizeMB: Invalid value: 4: must divide pageSizeMB (63): memcached fills a page with whole write buffers",
            ],
        ),
        (
            "write buffer below -I",
            with(on(json!({})), "memcached", json!({"maxItemSize": "32m"})),
            vec![
                "spec.extstore.writeBufferSizeMB: Invalid value: 4: must hold the largest item: maxItemSize 32m is 33554432 bytes, a write buffer of 4 MiB 4194304 (memcached refuses -I larger than ext_wbuf_size)",
            ],
        ),
        (
            "item size at -I",
            on(json!({"itemSizeBytes": 1_048_576})),
            vec![
                "spec.extstore.itemSizeBytes: Invalid value: 1048576: must be below maxItemSize 1m (1048576 bytes): only items larger than it go to extstore, so none would",
            ],
        ),
        (
            "threads out of range",
            on(json!({"threads": 65})),
            vec!["spec.extstore.threads: Invalid value: 65: should be less than or equal to 64"],
        ),
        (
            "max frag above 1",
            on(json!({"maxFrag": 1.5})),
            vec!["spec.extstore.maxFrag: Invalid value: 1.5: must be between 0 and 1"],
        ),
        (
            "compaction past the file",
            on(json!({"compactUnderPages": 17})),
            vec![
                "spec.extstore.compactUnderPages: Invalid value: 17: must be at most the file's 16 pages",
            ],
        ),
        (
            "storage class with emptyDir",
            on(json!({"volume": "EmptyDir", "storageClassName": "fast"})),
            vec![
                "spec.extstore.storageClassName: Invalid value: \"fast\": a storage class names an ephemeral volume's class: not with volume EmptyDir",
            ],
        ),
        (
            "ext_ options in extraArgs too",
            with(
                on(json!({})),
                "memcached",
                json!({"extraArgs": ["-o", "ext_threads=4"]}),
            ),
            vec![
                "spec.memcached.extraArgs[1]: Invalid value: \"ext_threads=4\": extstore options belong in spec.extstore when it is enabled: memcached would read both, the last one winning",
            ],
        ),
        (
            "UDP in extraArgs",
            with(
                on(json!({})),
                "memcached",
                json!({"extraArgs": ["-U", "11211"]}),
            ),
            vec![
                "spec.memcached.extraArgs[0]: Invalid value: \"-U\": UDP port 11211 with extstore: memcached refuses UDP with extstore enabled (\"Cannot use UDP with extstore enabled\")",
            ],
        ),
        (
            "with warm restart",
            with(
                with(on(json!({})), "workload", json!("StatefulSet")),
                "warmRestart",
                json!({"enabled": true}),
            ),
            vec![
                "spec.extstore.enabled: Invalid value: true: extstore cannot be used with warmRestart: memcached starts with both but never restores (\"memory restart with extstore not presently supported\")",
            ],
        ),
    ];
    for (name, spec, want) in cases {
        assert_eq!(refused(spec), want, "{name}");
    }
}

#[test]
fn ext_options_in_extra_args_alone_are_kept() {
    let spec = json!({"memcached": {"extraArgs": ["-o", "ext_path=/data/e:1G"]}});
    assert_eq!(refused(spec), Vec::<String>::new());
}

#[test]
fn udp_and_ext_options_are_refused_in_every_spelling_memcached_reads() {
    let spec = |args: Value| json!({"extstore": {"enabled": true, "size": "1Gi"}, "memcached": {"extraArgs": args}});
    let udp = "UDP port 11211 with extstore";
    let ext = "extstore options belong in spec.extstore";
    for (args, field, detail) in [
        (
            json!(["-U", "11211"]),
            "extraArgs[0]: Invalid value: \"-U\"",
            udp,
        ),
        (
            json!(["-vU11211"]),
            "extraArgs[0]: Invalid value: \"-vU11211\"",
            udp,
        ),
        (
            json!(["-v", "-vU", "11211"]),
            "extraArgs[1]: Invalid value: \"-vU\"",
            udp,
        ),
        (json!(["--udp-port=11211"]), "extraArgs[0]", udp),
        (json!(["--udp", "11211"]), "extraArgs[0]", udp),
        (
            json!(["-vvoext_path=/x:1g"]),
            "extraArgs[0]: Invalid value: \"-vvoext_path=/x:1g\"",
            ext,
        ),
        (
            json!(["-vo", "ext_path=/x:1g"]),
            "extraArgs[1]: Invalid value: \"ext_path=/x:1g\"",
            ext,
        ),
        (
            json!(["--extended=no_lru_crawler,ext_threads=2"]),
            "extraArgs[0]",
            ext,
        ),
        (json!(["--ext", "ext_threads=2"]), "extraArgs[1]", ext),
    ] {
        let shown = refused(spec(args.clone()));
        assert_eq!(shown.len(), 1, "{args}: {shown:?}");
        let want = format!("spec.memcached.{field}");
        assert!(
            shown[0].starts_with(&want) && shown[0].contains(detail),
            "{args}: {shown:?}"
        );
    }
    // What memcached does not read as a UDP port or an extstore option stays allowed.
    for args in [
        json!(["-U", "0"]),
        json!(["-vU0"]),
        json!(["-o", "no_lru_crawler"]),
        json!(["-v", "--", "-U", "11211"]),
        json!(["-m", "128", "ext_path=/x:1g"]),
    ] {
        assert_eq!(refused(spec(args.clone())), Vec::<String>::new(), "{args}");
    }
}

#[test]
fn storage_class_names_are_dns_subdomains_as_the_api_server_requires() {
    let extstore = |class: &str| json!({"extstore": {"enabled": true, "size": "1Gi", "storageClassName": class}});
    let warm = |class: &str| {
        json!({"workload": "StatefulSet",
               "warmRestart": {"enabled": true, "storageClassName": class}})
    };
    let syntax = "must be a DNS-1123 subdomain";
    for class in [
        "Fast_SSD",
        "fast;rm",
        "fast/ssd",
        "fast\nssd",
        "-fast",
        "fast.",
        "a..b",
        "é",
    ] {
        for (spec, field) in [
            (extstore(class), "spec.extstore.storageClassName"),
            (warm(class), "spec.warmRestart.storageClassName"),
        ] {
            let shown = refused(spec);
            assert_eq!(shown.len(), 1, "{class:?}: {shown:?}");
            assert!(
                shown[0].starts_with(&format!("{field}: Invalid value: "))
                    && shown[0].contains(syntax),
                "{class:?}: {shown:?}"
            );
        }
    }
    let long = "a".repeat(254);
    assert_eq!(
        refused(extstore(&long)),
        ["spec.extstore.storageClassName: Too long: may not be more than 253 bytes"]
    );
    let longest = format!("{0}.{0}.{0}.{1}", "a".repeat(63), "a".repeat(61));
    assert_eq!(longest.len(), 253);
    for class in ["", "fast-ssd", "local.nvme.example.com", &longest] {
        assert_eq!(refused(extstore(class)), Vec::<String>::new(), "{class:?}");
        assert_eq!(refused(warm(class)), Vec::<String>::new(), "{class:?}");
    }
}

#[test]
fn sizes_of_exactly_a_gibibyte_are_written_as_the_api_server_stores_them() {
    // 962 MB of items, 1024 connections and a 1Gi file: a memory request of exactly 1024 MiB.
    let view = pod_view(json!({"memcached": {"maxMemoryMB": 962},
                               "extstore": {"enabled": true, "size": "1Gi"}}));
    assert_eq!(view["resources"], json!({"requests": {"memory": "1Gi"}}));
    // A 903 MiB file: 903 + 57 + 64 = 1024 MiB of volume.
    let view = pod_view(json!({"extstore": {"enabled": true, "size": "903Mi"}}));
    let claim = &view["volumes"][0]["ephemeral"]["volumeClaimTemplate"]["spec"];
    assert_eq!(claim["resources"]["requests"]["storage"], json!("1Gi"));
}

#[test]
fn a_file_on_the_node_disk_requests_its_ephemeral_storage() {
    let view =
        pod_view(json!({"extstore": {"enabled": true, "size": "2Gi", "volume": "EmptyDir"}}));
    assert_eq!(
        view["resources"],
        json!({"requests": {"memory": "111Mi", "ephemeral-storage": "2Gi"}})
    );
    assert_eq!(
        view["volumes"][0]["emptyDir"],
        json!({"sizeLimit": "2240Mi"})
    );
    // The user's own request or limit of ephemeral storage stands.
    for given in [
        json!({"requests": {"ephemeral-storage": "5Gi"}}),
        json!({"limits": {"ephemeral-storage": "5Gi"}}),
    ] {
        let view = pod_view(json!({"resources": given,
                                   "extstore": {"enabled": true, "size": "2Gi", "volume": "EmptyDir"}}));
        let resources = &view["resources"];
        assert!(
            resources.to_string().matches("ephemeral-storage").count() == 1
                && resources.to_string().contains("5Gi"),
            "{resources}"
        );
    }
    // A claim's storage is not the node's.
    let view = pod_view(json!({"extstore": {"enabled": true, "size": "2Gi"}}));
    assert_eq!(view["resources"], json!({"requests": {"memory": "111Mi"}}));
}

#[test]
fn max_frag_reaches_memcached_exactly_and_a_huge_size_is_too_large() {
    let view = pod_view(json!({"extstore": {"enabled": true, "size": "1Gi", "maxFrag": 0.001}}));
    let args: Vec<String> = serde_json::from_value(view["args"].clone()).expect("args");
    assert_eq!(
        args.last().map(String::as_str),
        Some("ext_max_frag=0.001,ext_path=/data/extstore:1024m")
    );
    for size in ["1e60", "1e39", "400e36"] {
        let shown = refused(json!({"extstore": {"enabled": true, "size": size}}));
        assert_eq!(
            shown,
            [format!(
                "spec.extstore.size: Invalid value: \"{size}\": is too large: a volume size must be below 2^128 bytes"
            )],
            "{size}"
        );
    }
    let shown = refused(json!({"extstore": {"enabled": true, "size": "1e30"}}));
    assert!(
        shown.len() == 1 && shown[0].contains("must be at most 65534 pages"),
        "{shown:?}"
    );
}
