// Command node-images makes the container images the real test node runs, without a registry or a
// container engine (none is reachable here), and is itself the small program inside two of them:
//
//	node-images build OUT.tar REF ENTRYPOINT... -- FILE=PATH[:MODE]...  writes an image as a docker-archive
//	                                                                 tarball for `ctr images import`
//	node-images pause                                               the pod sandbox's process: sleeps until
//	                                                                 SIGTERM/SIGINT
//	node-images http [-port N]                                      a test web server (see serve.go)
//
// Images are built with go-containerregistry as a library: one layer holding the given files, a config
// with the entrypoint and this machine's platform (containerd imports only images for its platform).
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: node-images build|pause|http ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "pause":
		pause()
	case "http":
		err = serve(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want build, pause or http)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "node-images:", err)
		os.Exit(1)
	}
}
