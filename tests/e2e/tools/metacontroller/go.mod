// Wrapper module for building Metacontroller v4.17.2 from the Go module proxy.
// Metacontroller's module path is `metacontroller` and its v4 tags carry no /v4
// suffix, so it is required under its own path and replaced by a v0
// pseudo-version of the commit behind v4.17.2 on the GitHub path. A dependency's
// replace directives are ignored, so Metacontroller's own replace lines (as of
// v4.17.2, see shared/metacontroller-contract.md §7.3) are repeated here.
module memcached-hook.e2e/metacontroller

go 1.26.4

require metacontroller v0.0.0-00010101000000-000000000000

tool metacontroller/pkg/cmd/metacontroller

replace metacontroller => github.com/metacontroller/metacontroller v0.0.0-20260813214108-175eac0765b2

replace (
	golang.org/x/net => golang.org/x/net v0.57.0
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.36.3
	k8s.io/apimachinery => k8s.io/apimachinery v0.36.3
	k8s.io/client-go => k8s.io/client-go v0.36.3
)
