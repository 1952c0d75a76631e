package dbfile

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apistack/platform/services/geoip/internal/ip2bin"
)

// Metrics are the database metrics of one Manager.
type Metrics struct {
	m        *Manager
	info     *prometheus.Desc
	records  *prometheus.Desc
	build    *prometheus.Desc
	age      *prometheus.Desc
	reloads  prometheus.Counter
	failures *prometheus.CounterVec
}

// Reasons a database file is refused, the reason label of
// geoip_database_reload_failures_total.
const (
	reasonFile    = "file"    // it cannot be read, or the verified download cannot be renamed
	reasonFormat  = "format"  // not a database of a known format, or a header that makes no sense
	reasonCorrupt = "corrupt" // a BIN whose body fails the full walk, or a truncated one
	reasonLookup  = "lookup"  // it opened but could not answer the probe lookups
)

// newMetrics names the metrics <stem>_info, <stem>_records and so on; the age is
// geoip_database_age_seconds{database=name} for every database, so that one alert rule
// covers them all.
func newMetrics(m *Manager, stem, name string) *Metrics {
	return &Metrics{
		m: m,
		info: prometheus.NewDesc(stem+"_info",
			"The database serving now; always 1.",
			[]string{"format", "type", "build_date", "records", "version"}, nil),
		records: prometheus.NewDesc(stem+"_records",
			"Ranges (BIN) or search tree nodes (MMDB) in the database serving now.", nil, nil),
		build: prometheus.NewDesc(stem+"_build_timestamp_seconds",
			"Build date of the database serving now, as a Unix time.", nil, nil),
		age: prometheus.NewDesc("geoip_database_age_seconds",
			"Time since the build date of the database serving now, by database (city or asn); absent when the database names no build date.",
			nil, prometheus.Labels{"database": name}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: stem + "_reloads_total",
			Help: "Databases swapped in after start-up.",
		}),
		failures: newFailures(stem),
	}
}

func newFailures(stem string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: stem + "_reload_failures_total",
		Help: "Database files refused because they did not open or verify, by reason: file, format, corrupt or lookup.",
	}, []string{"reason"})
	for _, r := range []string{reasonFile, reasonFormat, reasonCorrupt, reasonLookup} {
		v.WithLabelValues(r) // every reason is scraped, at 0 until it happens
	}
	return v
}

// failureReason classifies why a file was refused.
func failureReason(err error) string {
	var corrupt *ip2bin.CorruptError
	var verify *verifyError
	var path *fs.PathError
	var link *os.LinkError
	switch {
	case errors.As(err, &corrupt):
		return reasonCorrupt
	case errors.As(err, &verify):
		return reasonLookup
	case errors.As(err, &path), errors.As(err, &link):
		return reasonFile
	}
	return reasonFormat
}

// Describe implements prometheus.Collector.
func (x *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- x.info
	ch <- x.records
	ch <- x.build
	ch <- x.age
	x.reloads.Describe(ch)
	x.failures.Describe(ch)
}

// Collect implements prometheus.Collector; the info labels follow the database serving
// at scrape time.
func (x *Metrics) Collect(ch chan<- prometheus.Metric) {
	info := x.m.Info()
	ch <- prometheus.MustNewConstMetric(x.info, prometheus.GaugeValue, 1,
		info.Format, info.Type, info.BuildDate.Format(time.DateOnly), strconv.Itoa(info.Records), info.Version())
	ch <- prometheus.MustNewConstMetric(x.records, prometheus.GaugeValue, float64(info.Records))
	ch <- prometheus.MustNewConstMetric(x.build, prometheus.GaugeValue, float64(info.BuildDate.Unix()))
	if age, ok := x.m.Age(); ok {
		ch <- prometheus.MustNewConstMetric(x.age, prometheus.GaugeValue, age.Seconds())
	}
	x.reloads.Collect(ch)
	x.failures.Collect(ch)
}

// RegisterMetrics registers the database metrics on reg (the HTTP layer passes the
// library's registry).
func (m *Manager) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(m.metrics)
}
