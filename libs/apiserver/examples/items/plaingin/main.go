// Command plaingin is the comparison point of the items example's
// throughput benchmark (wrkbench.sh, docs/benchmarks.md, libs/apiserver): it
// serves package floor (plain gin, the same items through c.JSON) on -addr;
// -headers also sends the library's headers (the floor of the same bytes).
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/apistack/platform/libs/apiserver/examples/items/plaingin/floor"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18082", "listen address")
	file := flag.String("items", "", "the items example's GET /items answer, to serve the same items")
	headers := flag.Bool("headers", false, "also send the library's headers (RateLimit-*, X-Content-Type-Options, X-Request-Id) with fixed values")
	flag.Parse()
	raw, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	var stored floor.List
	if err := json.Unmarshal(raw, &stored); err != nil {
		log.Fatal(err)
	}
	h := floor.Handler(stored)
	if *headers {
		h = floor.HandlerWithHeaders(stored)
	}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
