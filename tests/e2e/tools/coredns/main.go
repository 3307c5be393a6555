// CoreDNS with the few plugins the pods phase's cluster DNS needs: `kubernetes` serves the
// cluster domain (Service and per-pod names) from the API server; `bind` keeps it on the pod
// bridge's address; `ready` tells cluster.sh when the plugin has synced; `errors` and `log`
// explain failures.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The order in which the plugins handle a query (CoreDNS's plugin.cfg order, reduced).
func init() {
	dnsserver.Directives = []string{"bind", "ready", "errors", "log", "kubernetes"}
}

func main() { coremain.Run() }
