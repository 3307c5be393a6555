use super::*;

fn data(s: &Servers<'_>) -> BTreeMap<String, String> {
    build(s).data.unwrap_or_default()
}

fn pods(n: i32) -> Servers<'static> {
    Servers {
        name: "cache",
        namespace: "shop",
        members: Members::Pods(n),
        port: 11211,
        tls: false,
        proxy: false,
    }
}

#[test]
fn pods_are_listed_by_name_in_ordinal_order() {
    let d = data(&pods(3));
    assert_eq!(
        d[PLAIN],
        "cache-0.cache.shop.svc:11211,cache-1.cache.shop.svc:11211,cache-2.cache.shop.svc:11211"
    );
    assert_eq!(d[OSLO_CACHE], d[PLAIN]);
    assert_eq!(
        d[TWEMPROXY],
        "servers:\n  - cache-0.cache.shop.svc:11211:1 cache-0\n  - \
         cache-1.cache.shop.svc:11211:1 cache-1\n  - cache-2.cache.shop.svc:11211:1 cache-2\n"
    );
    let pools = &d[PROXY_POOLS];
    let order: Vec<usize> = (0..3)
        .map(|i| pools.find(&format!("\"cache-{i}.cache.shop.svc:11211\",")))
        .map(|at| at.expect("every pod is a backend"))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{pools}");
    assert_eq!(d[SRV_NAME], "_memcached._tcp.cache.shop.svc");
    assert!(!d.contains_key(TLS_SERVER_NAMES));
}

#[test]
fn the_lists_agree_with_the_status_server_list() {
    let status = Members::Pods(3).addresses("cache", "shop", 11211);
    assert_eq!(data(&pods(3))[PLAIN], status.join(","));
}

#[test]
fn a_deployment_is_listed_by_its_service_name() {
    let s = Servers {
        members: Members::Service(Shown::WhenReady),
        ..pods(0)
    };
    let d = data(&s);
    assert_eq!(d[PLAIN], "cache.shop:11211");
    assert_eq!(d[TWEMPROXY], "servers:\n  - cache.shop:11211:1 cache\n");
}

#[test]
fn no_pods_give_empty_lists_that_still_parse() {
    let d = data(&pods(0));
    assert_eq!(d[PLAIN], "");
    assert_eq!(d[TWEMPROXY], "servers: []\n");
    assert!(d[PROXY_POOLS].contains("backends = {\n        },"));
}

#[test]
fn tls_lists_the_tls_port_the_names_to_verify_and_no_twemproxy() {
    let s = Servers {
        port: 11212,
        tls: true,
        proxy: false,
        ..pods(2)
    };
    let d = data(&s);
    assert_eq!(
        d[PLAIN],
        "cache-0.cache.shop.svc:11212,cache-1.cache.shop.svc:11212"
    );
    assert_eq!(d[TLS_SERVER_NAMES], "*.cache.shop.svc");
    assert_eq!(d[SRV_NAME], "_memcached-tls._tcp.cache.shop.svc");
    assert!(d[PROXY_POOLS].contains("backend_options = { tls = true },"));
    assert!(!d.contains_key(TWEMPROXY), "twemproxy speaks no TLS");
    let service = Servers {
        members: Members::Service(Shown::WhenReady),
        ..s
    };
    assert_eq!(
        data(&service)[TLS_SERVER_NAMES],
        "cache.shop,cache.shop.svc"
    );
}

#[test]
fn oslo_cache_writes_an_ipv6_literal_in_its_inet6_form() {
    let entries = [
        Server {
            host: "fd00::1".to_owned(),
            label: "a".to_owned(),
        },
        Server {
            host: "10.0.0.1".to_owned(),
            label: "b".to_owned(),
        },
        Server {
            host: "cache-0.cache.shop.svc".to_owned(),
            label: "c".to_owned(),
        },
    ];
    assert_eq!(
        oslo_cache(&entries, 11211),
        "inet6:[fd00::1]:11211,10.0.0.1:11211,cache-0.cache.shop.svc:11211"
    );
}

#[test]
fn name_labels_and_keys_are_what_the_api_server_accepts() {
    let cm = build(&Servers {
        tls: true,
        proxy: false,
        ..pods(1)
    });
    assert_eq!(cm.metadata.name.as_deref(), Some("cache-servers"));
    assert_eq!(cm.metadata.labels, Some(labels::base("cache")));
    assert!(cm.metadata.annotations.is_none());
    let keys = data(&pods(1))
        .into_keys()
        .chain(cm.data.unwrap_or_default().into_keys());
    for key in keys {
        // A ConfigMap key: at most 253 of [-._a-zA-Z0-9].
        assert!(
            key.len() <= 253
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)),
            "{key}"
        );
    }
}

#[test]
fn the_same_membership_gives_the_same_bytes() {
    let a = serde_json::to_vec(&build(&pods(5))).expect("encodes");
    let b = serde_json::to_vec(&build(&pods(5))).expect("encodes");
    assert_eq!(a, b);
    assert_ne!(a, serde_json::to_vec(&build(&pods(4))).expect("encodes"));
}

#[test]
fn zones_list_every_zone_and_each_zone_under_its_own_key() {
    let zones = ["zone-a", "zone-b"];
    let d = data(&Servers {
        members: Members::Zones(&zones, 2),
        tls: true,
        proxy: false,
        ..pods(0)
    });
    assert_eq!(
        d["servers.zone-a"],
        "cache-zone-a-0.cache.shop.svc:11211,cache-zone-a-1.cache.shop.svc:11211"
    );
    assert_eq!(
        d["servers.zone-b"],
        "cache-zone-b-0.cache.shop.svc:11211,cache-zone-b-1.cache.shop.svc:11211"
    );
    assert_eq!(
        d[PLAIN],
        format!("{},{}", d["servers.zone-a"], d["servers.zone-b"])
    );
    assert_eq!(d[TLS_SERVER_NAMES], "*.cache.shop.svc");
    assert!(!data(&pods(2)).keys().any(|k| k.starts_with("servers.")));
}
