// Command plaingin is the comparison point of the items example's
// throughput benchmark (wrkbench.sh, docs/benchmarks.md "Issue 14"): plain
// gin answering GET /items with the same items, of the same shape, through
// c.JSON, with the query checked by hand.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

// item has the items example's shape.
type item struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Price     float64   `json:"price"`
	Tags      []string  `json:"tags"`
	CreatedAt time.Time `json:"created_at"`
}

type list struct {
	Items []item `json:"items"`
	Total int    `json:"total"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18082", "listen address")
	file := flag.String("items", "", "the items example's GET /items answer, to serve the same items")
	flag.Parse()
	raw, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	var stored list
	if err := json.Unmarshal(raw, &stored); err != nil {
		log.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/items", func(c *gin.Context) {
		limit, offset := 10, 0
		if v, ok := c.GetQuery("limit"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				c.JSON(http.StatusBadRequest, gin.H{"statusCode": 400, "error": "Bad Request", "message": "limit must be an integer from 1 to 100"})
				return
			}
			limit = n
		}
		if v, ok := c.GetQuery("offset"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				c.JSON(http.StatusBadRequest, gin.H{"statusCode": 400, "error": "Bad Request", "message": "offset must be a non-negative integer"})
				return
			}
			offset = n
		}
		page := []item{}
		if offset < len(stored.Items) {
			page = stored.Items[offset:min(offset+limit, len(stored.Items))]
		}
		c.JSON(http.StatusOK, list{Items: page, Total: len(stored.Items)})
	})
	srv := &http.Server{Addr: *addr, Handler: r, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
