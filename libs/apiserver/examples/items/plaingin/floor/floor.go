// Package floor is the comparison point of the items example's throughput
// benchmarks: plain gin answering GET /items with the same items, of the
// same shape, through c.JSON, with the query checked by hand. The plaingin
// command serves it over HTTP for wrk (wrkbench.sh); the example's
// in-process benchmark calls it directly, so both measure the same work.
package floor

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

// Item has the items example's shape.
type Item struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Price     float64   `json:"price"`
	Tags      []string  `json:"tags"`
	CreatedAt time.Time `json:"created_at"`
}

// List is the example's GET /items answer.
type List struct {
	Items []Item `json:"items"`
	Total int    `json:"total"`
}

// Handler serves GET /items?limit=&offset= from stored, as the example
// does: limit 1..100 (default 10), offset ≥ 0, 400 with a message
// otherwise.
func Handler(stored List) http.Handler { return handler(stored, false) }

// HandlerWithHeaders is Handler also sending the headers the library sends on
// every answer (RateLimit-*, X-Content-Type-Options, X-Request-Id), with fixed
// values of the same length: the floor that writes the same bytes, so a ratio
// against it counts only the library's own work.
func HandlerWithHeaders(stored List) http.Handler { return handler(stored, true) }

func handler(stored List, headers bool) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/items", func(c *gin.Context) {
		if headers {
			h := c.Writer.Header()
			h["Ratelimit-Limit"] = []string{"1000000000"}
			h["Ratelimit-Remaining"] = []string{"999999999"}
			h["Ratelimit-Reset"] = []string{"1"}
			h["X-Content-Type-Options"] = []string{"nosniff"}
			h["X-Request-Id"] = []string{"47137ac1534e-1"}
		}
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
		page := []Item{}
		if offset < len(stored.Items) {
			page = stored.Items[offset:min(offset+limit, len(stored.Items))]
		}
		c.JSON(http.StatusOK, List{Items: page, Total: len(stored.Items)})
	})
	return r
}
