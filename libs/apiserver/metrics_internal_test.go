package apiserver

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSeriesOfRecentRequests: the cache in front of the series gives each (route, method,
// status) its own series and label, hit or miss, and asks for the label only on a miss; a
// route string equal to one cached but held elsewhere is a miss that finds the same series.
func TestSeriesOfRecentRequests(t *testing.T) {
	m := newHTTPMetrics(prometheus.NewRegistry())
	labels := 0
	label := func(route string) string {
		labels++
		if route == "/:ip/city/" {
			return "/:ip/:field/"
		}
		return route
	}
	const city, json = "/:ip/city/", "/:ip/json/"
	observe := func(route, method string, code int) *seriesSlot {
		e := m.seriesOf(route, method, code, label)
		e.s.observe(0.001)
		return e
	}
	observe(city, "GET", 200)
	observe(city, "GET", 200)
	if labels != 1 {
		t.Errorf("the label was asked %d times for two requests of one route, want once", labels)
	}
	if e := observe(strings.Clone(city), "GET", 200); e.label != "/:ip/:field/" {
		t.Errorf("an equal route held elsewhere is labelled %q", e.label)
	}
	observe(city, "HEAD", 200)
	observe(city, "GET", 404)
	observe(json, "GET", 200)
	observe("", "GET", 404)
	observe("", "BREW", 404)
	before := labels
	observe(strings.Repeat("x", 0), "GET", 404) // unmatched again: an empty route is one, wherever held
	if labels != before {
		t.Error("an unmatched request missed the cache")
	}
	// Far more combinations than the cache has slots, twice over, each counted once a round.
	for round := range 2 {
		for code := range 2 * recentSeries {
			observe(json, "POST", 200+code)
			if round == 1 {
				if got := testutil.ToFloat64(m.requests.WithLabelValues("POST", json, strconv.Itoa(200+code))); got != 2 {
					t.Fatalf("POST %s %d counted %v times, want 2", json, 200+code, got)
				}
			}
		}
	}
	for _, tc := range []struct {
		method, route, code string
		want                float64
	}{
		{"GET", "/:ip/:field/", "200", 3},
		{"HEAD", "/:ip/:field/", "200", 1},
		{"GET", "/:ip/:field/", "404", 1},
		{"GET", json, "200", 1},
		{"GET", unmatchedRoute, "404", 2},
		{"OTHER", unmatchedRoute, "404", 1},
	} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(tc.method, tc.route, tc.code)); got != tc.want {
			t.Errorf("%s %s %s: %v requests, want %v", tc.method, tc.route, tc.code, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.requests); n != 6+2*recentSeries {
		t.Errorf("%d series, want %d", n, 6+2*recentSeries)
	}
}
