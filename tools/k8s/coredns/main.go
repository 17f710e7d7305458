// CoreDNS with only the plugins the real test node's Corefile uses (test/infra/real-node/coredns.ts), the way
// CoreDNS documents custom builds: import coremain and the wanted plugins. The full build links every cloud
// provider's SDK and took 14 minutes cold on 2 busy cores.
package main

import (
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
