// Command plaingin is the comparison point of the items example's
// throughput benchmark (wrkbench.sh, docs/benchmarks.md, libs/apiserver): it
// serves package floor (plain gin, the same items through c.JSON) on -addr.
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
	flag.Parse()
	raw, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	var stored floor.List
	if err := json.Unmarshal(raw, &stored); err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: *addr, Handler: floor.Handler(stored), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
