// Command etcd is a thin wrapper so that etcd's server can be built from the Go
// module proxy alone: the upstream root module replaces its submodules with
// local paths, which `go install` refuses. Pinned versions live in go.mod.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
