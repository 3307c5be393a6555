//! Tests of `spec.extstore`'s effective view and its `-o` option.

use super::*;

fn on(size: &str) -> ExtstoreSpec {
    ExtstoreSpec {
        enabled: Some(true),
        size: Some(KubeQuantity(size.into())),
        ..ExtstoreSpec::default()
    }
}

#[test]
fn max_frag_reaches_memcached_exactly() {
    for (f, shown) in [
        (0.5, "0.50"),
        (0.25, "0.25"),
        (0.001, "0.001"),
        (0.125, "0.125"),
        (0.0, "0.00"),
        (1.0, "1.00"),
        (1e-7, "0.0000001"),
        (0.333_333_333_333_333_3, "0.3333333333333333"),
    ] {
        assert_eq!(exact(f), shown);
        assert_eq!(exact(f).parse::<f64>(), Ok(f));
    }
    let spec = ExtstoreSpec {
        max_frag: Some(0.001),
        ..on("1Gi")
    };
    let x = Extstore::of(Some(&spec)).expect("enabled");
    assert_eq!(
        x.option(),
        "ext_max_frag=0.001,ext_path=/data/extstore:1024m"
    );
}

#[test]
fn the_volume_holds_the_file_and_the_filesystem() {
    assert_eq!(volume_mib(512), 512 + 32 + 64);
    assert_eq!(volume_mib(1024), 1024 + 64 + 64);
    assert_eq!(volume_mib(100), 100 + 7 + 64);
}

#[test]
fn defaults_render_only_the_path() {
    let spec = on("1Gi");
    let x = Extstore::of(Some(&spec)).expect("enabled");
    assert_eq!(x.option(), "ext_path=/data/extstore:1024m");
    assert_eq!((x.pages(), x.volume_mib), (16, 1152));
    assert_eq!(x.memory_mib(), 5 * 4 + 1 + 1);
    assert_eq!(Extstore::of(Some(&ExtstoreSpec::default())), None);
}

#[test]
fn the_page_size_comes_before_the_path() {
    let spec = ExtstoreSpec {
        page_size_mb: Some(32),
        write_buffer_size_mb: Some(8),
        threads: Some(2),
        max_frag: Some(0.5),
        ..on("1G")
    };
    let x = Extstore::of(Some(&spec)).expect("enabled");
    assert_eq!(
        x.option(),
        "ext_page_size=32,ext_wbuf_size=8,ext_threads=2,ext_max_frag=0.50,\
         ext_path=/data/extstore:953m"
    );
}
