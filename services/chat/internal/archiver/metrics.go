package archiver

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the archive's, per replica: a dashboard sums backlog and
// rows over replicas and takes the maximum of lag.
type metrics struct {
	lag        prometheus.Gauge
	backlog    prometheus.Gauge
	shards     prometheus.Gauge
	rows       *prometheus.CounterVec
	errors     *prometheus.CounterVec
	lost       prometheus.Counter
	lostModLog prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "chat_archive_lag_seconds",
			Help: "Age of the oldest message or event this replica's channels have not archived yet, at the end of the last pass (0: caught up)."}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{Name: "chat_archive_backlog_messages",
			Help: "Messages stored in Redis and not yet archived, over the channels of the shards this replica holds, at the end of the last pass."}),
		shards: prometheus.NewGauge(prometheus.GaugeOpts{Name: "chat_archive_shards_held",
			Help: "Archive shard leases this replica holds (the shards' channels are archived by it)."}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chat_archive_rows_written_total",
			Help: "Rows written to the archive, by kind (message, event, modlog); a batch written again after a failure counts again."}, []string{"kind"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chat_archive_errors_total",
			Help: "Failures of the archiver, by operation (lease, list channels, read pending, write, move mark); each is retried."}, []string{"op"}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_archive_lost_messages_total",
			Help: "Messages the Redis window let go before they were archived (its cap, CHAT_ARCHIVE_HOLD, forced a trim while the archive was behind). Should stay 0."}),
		lostModLog: prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_archive_modlog_gaps_total",
			Help: "Times moderation log entries left the Redis window before they were archived. Should stay 0."}),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.lag, m.backlog, m.shards, m.rows, m.errors, m.lost, m.lostModLog} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register archive metrics: %w", err)
		}
	}
	return nil
}

// Metrics shows an archiver's collectors (tests read them).
type Metrics struct{ m *metrics }

// Metrics returns the archiver's collectors.
func (a *Archiver) Metrics() Metrics { return Metrics{a.m} }

// Lag is chat_archive_lag_seconds.
func (v Metrics) Lag() prometheus.Gauge { return v.m.lag }

// Backlog is chat_archive_backlog_messages.
func (v Metrics) Backlog() prometheus.Gauge { return v.m.backlog }

// Shards is chat_archive_shards_held.
func (v Metrics) Shards() prometheus.Gauge { return v.m.shards }

// Rows is chat_archive_rows_written_total of kind.
func (v Metrics) Rows(kind string) prometheus.Counter { return v.m.rows.WithLabelValues(kind) }

// Errors is chat_archive_errors_total of op.
func (v Metrics) Errors(op string) prometheus.Counter { return v.m.errors.WithLabelValues(op) }

// Lost is chat_archive_lost_messages_total.
func (v Metrics) Lost() prometheus.Counter { return v.m.lost }
