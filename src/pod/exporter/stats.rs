//! memcached's `stats` under the names of the Prometheus memcached exporter (`memcached_up`,
//! `memcached_commands_total{command,status}`, ...), so that dashboards and alerts written for
//! the exporter read them unchanged, extstore's among them when memcached runs with flash, and
//! the proxy's (`memcached_proxy_*`) when memcached runs as its proxy. Only
//! the server-wide series: the exporter's per-slab series
//! (`memcached_slab_*`, which need `stats items`/`stats slabs`) are not produced.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

use crate::pod::memcached::Stats;

/// How a value is exposed.
#[derive(Clone, Copy)]
enum Kind {
    Gauge,
    /// Exposed with the `_total` suffix.
    Counter,
}

/// `stats` field, series name (without `_total` for counters), kind, help.
const GENERAL: &[(&str, &str, Kind, &str)] = &[
    (
        "uptime",
        "memcached_uptime_seconds",
        Kind::Gauge,
        "Seconds since the server started",
    ),
    (
        "time",
        "memcached_time_seconds",
        Kind::Gauge,
        "The server's UNIX time",
    ),
    (
        "rusage_user",
        "memcached_process_user_cpu_seconds",
        Kind::Counter,
        "User CPU time of the process",
    ),
    (
        "rusage_system",
        "memcached_process_system_cpu_seconds",
        Kind::Counter,
        "System CPU time of the process",
    ),
    (
        "bytes_read",
        "memcached_read_bytes",
        Kind::Counter,
        "Bytes read from the network",
    ),
    (
        "bytes_written",
        "memcached_written_bytes",
        Kind::Counter,
        "Bytes sent to the network",
    ),
    (
        "curr_connections",
        "memcached_current_connections",
        Kind::Gauge,
        "Open connections",
    ),
    (
        "total_connections",
        "memcached_connections",
        Kind::Counter,
        "Connections opened since the start",
    ),
    (
        "rejected_connections",
        "memcached_connections_rejected",
        Kind::Counter,
        "Connections rejected at the -c limit",
    ),
    (
        "conn_yields",
        "memcached_connections_yielded",
        Kind::Counter,
        "Connections yielded at the -R limit",
    ),
    (
        "listen_disabled_num",
        "memcached_connections_listener_disabled",
        Kind::Counter,
        "Times the listener was disabled at the -c limit",
    ),
    (
        "accepting_conns",
        "memcached_accepting_connections",
        Kind::Gauge,
        "1 while the server accepts new connections",
    ),
    (
        "bytes",
        "memcached_current_bytes",
        Kind::Gauge,
        "Bytes used by stored items",
    ),
    (
        "limit_maxbytes",
        "memcached_limit_bytes",
        Kind::Gauge,
        "Bytes the server may use for items (-m)",
    ),
    (
        "total_malloced",
        "memcached_malloced_bytes",
        Kind::Gauge,
        "Bytes allocated to slab pages",
    ),
    (
        "curr_items",
        "memcached_current_items",
        Kind::Gauge,
        "Items stored now",
    ),
    (
        "total_items",
        "memcached_items",
        Kind::Counter,
        "Items stored since the start",
    ),
    (
        "evictions",
        "memcached_items_evicted",
        Kind::Counter,
        "Valid items removed to free memory for new ones",
    ),
    (
        "reclaimed",
        "memcached_items_reclaimed",
        Kind::Counter,
        "Items stored in the memory of an expired one",
    ),
    (
        "store_too_large",
        "memcached_item_too_large",
        Kind::Counter,
        "Items refused for exceeding the item size limit",
    ),
    (
        "store_no_memory",
        "memcached_item_no_memory",
        Kind::Counter,
        "Items refused for lack of memory",
    ),
    (
        "direct_reclaims",
        "memcached_direct_reclaims",
        Kind::Counter,
        "Times workers had to reclaim or evict directly",
    ),
];

/// The `stats` fields of extstore, present only when memcached runs with flash
/// (`extstore_limit_maxbytes` among them), under the exporter's names. The exporter types
/// `memcached_extstore_bytes_used` a counter without the `_total` suffix; here it is the gauge
/// it is, under the same series name.
const EXTSTORE: &[(&str, &str, Kind, &str)] = &[
    (
        "extstore_compact_lost",
        "memcached_extstore_compact_lost",
        Kind::Counter,
        "Items lost to compaction because they were locked",
    ),
    (
        "extstore_compact_rescues",
        "memcached_extstore_compact_rescued",
        Kind::Counter,
        "Items moved to a new page by compaction",
    ),
    (
        "extstore_compact_skipped",
        "memcached_extstore_compact_skipped",
        Kind::Counter,
        "Items dropped by compaction for inactivity",
    ),
    (
        "extstore_page_allocs",
        "memcached_extstore_pages_allocated",
        Kind::Counter,
        "Flash pages allocated",
    ),
    (
        "extstore_page_evictions",
        "memcached_extstore_pages_evicted",
        Kind::Counter,
        "Flash pages evicted to make room",
    ),
    (
        "extstore_page_reclaims",
        "memcached_extstore_pages_reclaimed",
        Kind::Counter,
        "Empty flash pages freed",
    ),
    (
        "extstore_pages_free",
        "memcached_extstore_pages_free",
        Kind::Gauge,
        "Flash pages holding no item",
    ),
    (
        "extstore_pages_used",
        "memcached_extstore_pages_used",
        Kind::Gauge,
        "Flash pages holding at least one item",
    ),
    (
        "extstore_objects_evicted",
        "memcached_extstore_objects_evicted",
        Kind::Counter,
        "Items evicted from flash",
    ),
    (
        "extstore_objects_read",
        "memcached_extstore_objects_read",
        Kind::Counter,
        "Items read from flash",
    ),
    (
        "extstore_objects_written",
        "memcached_extstore_objects_written",
        Kind::Counter,
        "Items written to flash",
    ),
    (
        "extstore_objects_used",
        "memcached_extstore_objects_used",
        Kind::Gauge,
        "Items on flash now",
    ),
    (
        "extstore_bytes_evicted",
        "memcached_extstore_bytes_evicted",
        Kind::Counter,
        "Bytes evicted from flash",
    ),
    (
        "extstore_bytes_written",
        "memcached_extstore_bytes_written",
        Kind::Counter,
        "Bytes written to flash",
    ),
    (
        "extstore_bytes_read",
        "memcached_extstore_bytes_read",
        Kind::Counter,
        "Bytes read from flash",
    ),
    (
        "extstore_bytes_used",
        "memcached_extstore_bytes_used",
        Kind::Gauge,
        "Bytes of items on flash now",
    ),
    (
        "extstore_bytes_fragmented",
        "memcached_extstore_bytes_fragmented",
        Kind::Gauge,
        "Bytes of allocated flash pages holding no item",
    ),
    (
        "extstore_limit_maxbytes",
        "memcached_extstore_bytes_limit",
        Kind::Gauge,
        "Bytes of flash memcached may use",
    ),
    (
        "extstore_io_queue",
        "memcached_extstore_io_queue_depth",
        Kind::Gauge,
        "Items waiting in the flash I/O queue",
    ),
];

/// memcached's proxy (`-o proxy_config`): the fields its `stats` lists only when the proxy runs,
/// under the exporter's names and types (it types `proxy_backend_failed` a gauge; memcached
/// counts it up).
const PROXY: &[(&str, &str, Kind, &str)] = &[
    (
        "proxy_conn_requests",
        "memcached_proxy_conn_requests",
        Kind::Counter,
        "Requests from clients",
    ),
    (
        "proxy_conn_errors",
        "memcached_proxy_conn_errors",
        Kind::Counter,
        "Requests from clients answered with an error",
    ),
    (
        "proxy_conn_oom",
        "memcached_proxy_conn_oom",
        Kind::Counter,
        "Requests refused for lack of buffer memory",
    ),
    (
        "proxy_req_active",
        "memcached_proxy_req_active",
        Kind::Gauge,
        "Requests in flight",
    ),
    (
        "proxy_config_reloads",
        "memcached_proxy_config_reloads",
        Kind::Counter,
        "Route configurations loaded, the first included",
    ),
    (
        "proxy_config_reload_fails",
        "memcached_proxy_config_reload_fails",
        Kind::Counter,
        "Route configurations that failed to load (the previous one stays in force)",
    ),
    (
        "proxy_backend_total",
        "memcached_proxy_backend_total",
        Kind::Gauge,
        "Backends the route configuration names",
    ),
    (
        "proxy_backend_marked_bad",
        "memcached_proxy_backend_marked_bad",
        Kind::Counter,
        "Times a backend was marked bad after repeated failures",
    ),
    (
        "proxy_backend_failed",
        "memcached_proxy_backend_failed",
        Kind::Gauge,
        "Failed connections or requests to backends, since the start",
    ),
    (
        "proxy_request_failed_depth",
        "memcached_proxy_request_failed_depth",
        Kind::Counter,
        "Requests refused because a backend's queue was full",
    ),
];

/// Commands with `<command>_hits` and `<command>_misses` fields.
const HIT_MISS: [&str; 6] = ["get", "delete", "incr", "decr", "cas", "touch"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommandLabels {
    command: &'static str,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    version: String,
}

/// A field that is not a number: named in the log, its series left out.
fn number(fields: &std::collections::BTreeMap<String, String>, key: &str) -> Option<f64> {
    let raw = fields.get(key)?;
    let parsed = raw.parse::<f64>().ok();
    if parsed.is_none() {
        tracing::warn!(field = key, value = %raw, "memcached stats field is not a number; left out");
    }
    parsed
}

fn register_general(registry: &mut Registry, stats: &Stats) {
    // memcached lists extstore's fields only when it runs with flash.
    let with_flash = stats.general.contains_key("extstore_limit_maxbytes");
    let extstore: &[_] = if with_flash { EXTSTORE } else { &[] };
    // ... and the proxy's when it runs as memcached's proxy.
    let proxying = stats.general.contains_key("proxy_backend_total");
    let proxy: &[_] = if proxying { PROXY } else { &[] };
    for &(key, name, kind, help) in GENERAL.iter().chain(extstore).chain(proxy) {
        let Some(v) = number(&stats.general, key) else {
            continue;
        };
        match kind {
            Kind::Gauge => registry.register(name, help, ConstGauge::new(v)),
            Kind::Counter => registry.register(name, help, ConstCounter::new(v)),
        }
    }
    if let Some(v) = number(&stats.settings, "maxconns") {
        let help = "Most clients allowed at once (-c)";
        registry.register("memcached_max_connections", help, ConstGauge::new(v));
    }
    if let Some(version) = stats.general.get("version") {
        let family = Family::<VersionLabels, Gauge>::default();
        family
            .get_or_create(&VersionLabels {
                version: version.clone(),
            })
            .set(1);
        registry.register("memcached_version", "The server's version", family);
    }
}

fn register_commands(registry: &mut Registry, stats: &Stats) {
    let family = Family::<CommandLabels, Counter<f64, std::sync::atomic::AtomicU64>>::default();
    let add = |command, status, value: Option<f64>| {
        if let Some(v) = value {
            family
                .get_or_create(&CommandLabels { command, status })
                .inc_by(v);
        }
    };
    let s = &stats.general;
    for command in HIT_MISS {
        add(command, "hit", number(s, &format!("{command}_hits")));
        add(command, "miss", number(s, &format!("{command}_misses")));
    }
    add("cas", "badval", number(s, "cas_badval"));
    add("flush", "hit", number(s, "cmd_flush"));
    // `cmd_set` counts the cas commands too.
    let cas = ["cas_hits", "cas_misses", "cas_badval"]
        .iter()
        .map(|k| number(s, k))
        .sum::<Option<f64>>();
    if let (Some(set), Some(cas)) = (number(s, "cmd_set"), cas) {
        add("set", "hit", Some((set - cas).max(0.0)));
    }
    let help = "Requests by command and status";
    registry.register("memcached_commands", help, family);
}

/// The OpenMetrics text for one scrape: `memcached_up` 1 and the series of `stats`, or
/// `memcached_up` 0 alone when memcached could not be read.
#[must_use]
pub fn exposition(stats: Option<&Stats>) -> String {
    let mut registry = Registry::default();
    let up = ConstGauge::new(i64::from(stats.is_some()));
    registry.register("memcached_up", "Whether memcached answered stats", up);
    if let Some(stats) = stats {
        register_general(&mut registry, stats);
        register_commands(&mut registry, stats);
    }
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(pairs: &[(&str, &str)], settings: &[(&str, &str)]) -> Stats {
        let map = |p: &[(&str, &str)]| {
            p.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        Stats {
            general: map(pairs),
            settings: map(settings),
        }
    }

    /// Every line of `lines` is in the exposition `text`.
    fn assert_lines(text: &str, lines: &[&str]) {
        for line in lines {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn the_proxys_series_when_it_runs_as_the_proxy() {
        // Fields as memcached 1.6.45 lists them with `-o proxy_config`.
        let proxy = [
            ("proxy_conn_requests", "12"),
            ("proxy_conn_errors", "1"),
            ("proxy_req_active", "0"),
            ("proxy_config_reloads", "2"),
            ("proxy_config_reload_fails", "0"),
            ("proxy_backend_total", "6"),
            ("proxy_backend_marked_bad", "3"),
            ("proxy_backend_failed", "9"),
            ("proxy_request_failed_depth", "0"),
        ];
        let text = exposition(Some(&stats(&proxy, &[])));
        assert_lines(
            &text,
            &[
                "memcached_proxy_conn_requests_total 12.0\n",
                "memcached_proxy_conn_errors_total 1.0\n",
                "memcached_proxy_req_active 0.0\n",
                "memcached_proxy_config_reloads_total 2.0\n",
                "memcached_proxy_config_reload_fails_total 0.0\n",
                "memcached_proxy_backend_total 6.0\n",
                "memcached_proxy_backend_marked_bad_total 3.0\n",
                "memcached_proxy_backend_failed 9.0\n",
                "memcached_proxy_request_failed_depth_total 0.0\n",
            ],
        );
        // A cache pod lists none of them: no proxy series.
        let text = exposition(Some(&stats(&[("curr_connections", "1")], &[])));
        assert!(!text.contains("memcached_proxy"), "{text}");
    }

    #[test]
    fn unreachable_memcached_is_up_zero_and_nothing_else() {
        let text = exposition(None);
        assert!(text.contains("memcached_up 0\n"), "{text}");
        assert!(!text.contains("memcached_current"), "{text}");
    }

    #[test]
    fn the_exporters_names_and_values() {
        let s = stats(
            &[
                ("curr_connections", "7"),
                ("evictions", "3"),
                ("store_no_memory", "2"),
                ("rusage_user", "0.250000"),
                ("get_hits", "10"),
                ("get_misses", "4"),
                ("cas_hits", "1"),
                ("cas_misses", "1"),
                ("cas_badval", "1"),
                ("cmd_set", "8"),
                ("version", "1.6.38"),
                ("uptime", "not-a-number"),
            ],
            &[("maxconns", "1024")],
        );
        let text = exposition(Some(&s));
        assert_lines(
            &text,
            &[
                "memcached_up 1\n",
                "memcached_current_connections 7.0\n",
                "memcached_max_connections 1024.0\n",
                "memcached_items_evicted_total 3.0\n",
                "memcached_item_no_memory_total 2.0\n",
                "memcached_process_user_cpu_seconds_total 0.25\n",
                "memcached_commands_total{command=\"get\",status=\"hit\"} 10.0\n",
                "memcached_commands_total{command=\"get\",status=\"miss\"} 4.0\n",
                "memcached_commands_total{command=\"set\",status=\"hit\"} 5.0\n",
                "memcached_version{version=\"1.6.38\"} 1\n",
            ],
        );
        assert!(!text.contains("memcached_uptime_seconds "), "{text}");
        assert!(
            !text.contains("extstore"),
            "no flash, no extstore series: {text}"
        );
    }

    #[test]
    fn extstore_series_with_flash() {
        let s = stats(
            &[
                ("extstore_limit_maxbytes", "536870912"),
                ("extstore_bytes_used", "1048576"),
                ("extstore_objects_written", "12"),
                ("extstore_objects_evicted", "3"),
                ("extstore_objects_used", "9"),
                ("extstore_bytes_written", "4096"),
                ("extstore_bytes_read", "2048"),
                ("extstore_io_queue", "0"),
            ],
            &[],
        );
        let text = exposition(Some(&s));
        assert_lines(
            &text,
            &[
                "memcached_extstore_bytes_limit 536870912.0\n",
                "memcached_extstore_bytes_used 1048576.0\n",
                "memcached_extstore_objects_written_total 12.0\n",
                "memcached_extstore_objects_evicted_total 3.0\n",
                "memcached_extstore_objects_used 9.0\n",
                "memcached_extstore_bytes_written_total 4096.0\n",
                "memcached_extstore_bytes_read_total 2048.0\n",
                "memcached_extstore_io_queue_depth 0.0\n",
            ],
        );
    }
}
