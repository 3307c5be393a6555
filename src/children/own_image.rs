//! What every container of the hook's own image shares (the reload agent, the stats exporter,
//! the auth-file step, the warm-restart guard and stop): the image when the hook is not told
//! otherwise, and its binary.

/// The image when the hook is not told otherwise: the placeholder name the manifests use too
/// (deploy/ and the chart set `--reload-agent-image` to the image they run).
pub const DEFAULT_IMAGE: &str = concat!(
    "registry.example.com/memcached-hook:",
    env!("CARGO_PKG_VERSION")
);
/// The registry of the placeholder: no cluster can pull from it.
const PLACEHOLDER_REGISTRY: &str = "registry.example.com/";

/// Whether `image` is still the placeholder (or another image from its registry): pods with the
/// agent would stay in `ImagePullBackOff`.
#[must_use]
pub fn is_placeholder(image: &str) -> bool {
    image.trim().starts_with(PLACEHOLDER_REGISTRY)
}

/// The hook image's binary (its entrypoint runs `serve`).
pub(super) const BINARY: &str = "/memcached-hook";

#[cfg(test)]
mod tests {
    #[test]
    fn the_placeholder_is_recognised_and_a_real_image_is_not() {
        assert!(super::is_placeholder(super::DEFAULT_IMAGE));
        assert!(super::is_placeholder(
            "registry.example.com/memcached-hook:0.0.1"
        ));
        assert!(!super::is_placeholder("ghcr.io/corp/memcached-hook:0.1.0"));
        assert!(!super::is_placeholder(
            "registry.corp/registry.example.com/x:1"
        ));
    }
}
