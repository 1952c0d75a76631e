package apiserver

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apistack/platform/libs/apiserver/internal/fieldmem"
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
	// inFlight counts the requests being served: an integer added to, where a
	// prometheus.Gauge is a float changed by a compare-and-swap loop that both cores,
	// serving at once, kept retrying (two per request); a GaugeFunc reads it.
	inFlight atomic.Int64
	limited  *prometheus.CounterVec

	// children caches the series of each (method, route, code): label
	// lookups would otherwise hash three strings per request.
	children sync.Map // seriesKey -> *series
	// recent caches, in front of children, the series and route label of recent
	// requests by gin's route string, compared by address, method and status: gin
	// hands every request of a route its tree node's own string, so a hit hashes no
	// string (children's lookup hashed method and route, and the label's map the
	// route again, on every request).
	recent [recentSeries]atomic.Pointer[seriesSlot]
}

const recentSeries = 64

// seriesSlot is an entry of httpMetrics.recent.
type seriesSlot struct {
	route  string // gin's route ("" when none matched)
	method string // as the client sent it
	code   int
	label  string // the route label: the template, or unmatchedRoute
	s      *series
}

// seriesOf returns the series and route label of a request that gin matched to route
// (c.FullPath()); label maps a gin route to its label, "" when none matched.
func (m *httpMetrics) seriesOf(route, method string, code int, label func(string) string) *seriesSlot {
	h := fieldmem.DataAddr(route) >> 4
	h ^= uintptr(code)*0x9e3779b1 ^ uintptr(len(method))
	if len(method) > 0 {
		h ^= uintptr(method[0]) << 7
	}
	slot := &m.recent[h%recentSeries]
	if e := slot.Load(); e != nil && fieldmem.SameData(e.route, route) &&
		e.code == code && e.method == method {
		return e
	}
	l := label(route)
	if l == "" {
		l = unmatchedRoute
	}
	e := &seriesSlot{route: route, method: method, code: code, label: l, s: m.series(metricMethod(method), l, code)}
	slot.Store(e)
	return e
}

type seriesKey struct {
	method, route string
	code          int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// series returns the series of (method, route, code), label values already bounded.
func (m *httpMetrics) series(method, route string, code int) *series {
	k := seriesKey{method, route, code}
	v, ok := m.children.Load(k)
	if !ok {
		v, _ = m.children.LoadOrStore(k, &series{
			requests: m.requests.WithLabelValues(method, route, strconv.Itoa(code)),
			duration: m.duration.WithLabelValues(method, route),
		})
	}
	return v.(*series)
}

// observe records one finished request.
func (s *series) observe(seconds float64) {
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
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_rejections_total",
			Help: "Requests answered 429 by the rate limiter, by route template.",
		}, []string{"route"}),
	}
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "http_requests_in_flight",
		Help: "Requests being served now.",
	}, func() float64 { return float64(m.inFlight.Load()) })
	reg.MustRegister(m.requests, m.duration, inFlight, m.limited)
	return m
}
