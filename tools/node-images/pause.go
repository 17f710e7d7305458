package main

import (
	"os"
	"os/signal"
	"syscall"
)

// pause holds the pod's namespaces open, as Kubernetes' pause container does, until the runtime stops it.
// As PID 1 of its namespace it also reaps orphaned children, which the kernel hands to it.
func pause() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			if pid, _ := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}
