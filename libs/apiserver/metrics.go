package apiserver

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry is the registry New makes when Config.Registry is nil, with
// the Go and process collectors. A service whose parts register metrics
// before the server exists (the order of wiring is connections, stores,
// service, then HTTP) makes it first and passes it as Config.Registry.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// unmatchedRoute is the route label of requests that matched no route, so
// scanners cannot blow up the label cardinality.
const unmatchedRoute = "unmatched"

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	limited  *prometheus.CounterVec

	// children caches the series of each (method, route, code): label
	// lookups would otherwise hash three strings per request.
	children sync.Map // seriesKey -> *series
}

type seriesKey struct {
	method, route string
	code          int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// observe records one finished request.
func (m *httpMetrics) observe(method, route string, code int, seconds float64) {
	method = metricMethod(method)
	k := seriesKey{method, route, code}
	v, ok := m.children.Load(k)
	if !ok {
		v, _ = m.children.LoadOrStore(k, &series{
			requests: m.requests.WithLabelValues(method, route, strconv.Itoa(code)),
			duration: m.duration.WithLabelValues(method, route),
		})
	}
	s := v.(*series)
	s.requests.Inc()
	s.duration.Observe(seconds)
}

// metricMethod keeps the method label bounded: clients can send any token.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total",
			Help: "HTTP requests by method, route template and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "Time from request to response, by method and route template.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"method", "route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "http_requests_in_flight",
			Help: "Requests being served now.",
		}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_rejections_total",
			Help: "Requests answered 429 by the rate limiter, by route template.",
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.duration, m.inFlight, m.limited)
	return m
}
