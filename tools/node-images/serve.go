package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// serve is the test pods' web server:
//
//	GET /healthz          200 "ok" (the readiness probe)
//	GET /                 200 with the pod's host name, so a caller sees which pod answered
//	GET /fetch?url=URL    fetches URL from inside the pod and returns its status and body: how a test checks
//	                      pod-to-pod traffic by Service name (cluster DNS, then kube-proxy)
func serve(args []string) error {
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	port := fs.Int("port", 8080, "port to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _ := os.Hostname()
	client := &http.Client{Timeout: 10 * time.Second}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, host) })
	mux.HandleFunc("GET /fetch", func(w http.ResponseWriter, r *http.Request) {
		res, err := client.Get(r.URL.Query().Get("url"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		fmt.Fprintf(w, "%d %s", res.StatusCode, body)
	})
	return http.ListenAndServe(fmt.Sprintf(":%d", *port), mux)
}
