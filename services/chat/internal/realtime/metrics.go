package realtime

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics of one replica's live delivery. Labels are closed sets (close
// codes, error codes), never channel names, to keep cardinality bounded.
type metrics struct {
	connections prometheus.Gauge
	writers     prometheus.Gauge   // the writer pool's live runners, stuck ones included
	messages    prometheus.Counter // sends accepted over WebSockets
	events      prometheus.Counter // events read from channel logs
	delivered   prometheus.Counter // events written to sockets
	replayed    prometheus.Counter // events written by recoveries
	frames      prometheus.Counter
	dropped     prometheus.Counter // events discarded with a slow consumer's queue
	slowCloses  prometheus.Counter
	deadPeers   prometheus.Counter
	stuckWrites prometheus.Counter // writes that outlasted stuckWrite: their writer was replaced
	readErrors  prometheus.Counter
	logReads    prometheus.Counter // catch-up reads of channel logs
	closes      *prometheus.CounterVec
	sendErrors  *prometheus.CounterVec
	refused     *prometheus.CounterVec // sockets refused by a limit
	feedErrors  *prometheus.CounterVec // failures of the engine's feed, by chat.FeedFail* reason
	messagesVec *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "chat_ws_connections", Help: "Open WebSocket connections on this replica."}),
		writers:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "chat_ws_writers", Help: "Goroutines writing to this replica's sockets: at most CHAT_WS_WRITERS, plus one per write stuck on a slow peer."}),
		events:      prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_events_total", Help: "Channel events this replica fanned out to its subscribers."}),
		delivered:   prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_events_delivered_total", Help: "Events written to WebSocket subscribers (live)."}),
		replayed:    prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_events_replayed_total", Help: "Events written to WebSocket subscribers by recoveries (since=)."}),
		frames:      prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_frames_written_total", Help: "WebSocket frames written (a frame carries up to 64 events)."}),
		dropped:     prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_events_dropped_total", Help: "Events discarded with the queue of a subscriber closed as too slow (it recovers them with since)."}),
		slowCloses:  prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_slow_consumers_total", Help: "Connections closed with 4008 because their queue overflowed."}),
		deadPeers:   prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_dead_peers_total", Help: "Connections dropped for a missing pong or a stuck write."}),
		stuckWrites: prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_stuck_writes_total", Help: "Socket writes that lasted over 2 ms (a slow peer, or a writer that lost its CPU): the writer pool started another writer meanwhile."}),
		readErrors:  prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_log_read_errors_total", Help: "Failed reads of channel logs (retried from the last cursor)."}),
		logReads:    prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_log_reads_total", Help: "Reads of channel logs: when a channel starts or its feed showed a gap (events come with their notices otherwise)."}),
		closes:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chat_ws_server_closes_total", Help: "Connections the server closed, by close code."}, []string{"code"}),
		sendErrors:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chat_ws_send_errors_total", Help: "Send and auth frames answered with an error frame, by code."}, []string{"code"}),
		refused:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chat_ws_refused_total", Help: "WebSocket sockets refused by a connection limit (at the handshake, or at an auth frame for the per-user one), by limit."}, []string{"limit"}),
		feedErrors:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chat_feed_errors_total", Help: "Failures of this replica's live feed from the store (connect, subscribe, receive, place), each retried: while one lasts, the channels it concerns are delivered late, read from their logs once it recovers."}, []string{"reason"}),
		messagesVec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chat_messages_total", Help: "Messages accepted (stored), by transport."}, []string{"transport"}),
	}
	m.messages = m.messagesVec.WithLabelValues("websocket")
	for _, r := range feedFailReasons {
		m.feedErrors.WithLabelValues(r) // shown at 0 before the first failure
	}
	return m
}

// register adds the collectors to reg. chat_messages_total may already be
// there (the HTTP API counts its own transport under the same name): the
// existing vector is then shared.
func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.connections, m.writers, m.events, m.delivered, m.replayed, m.frames, m.dropped,
		m.slowCloses, m.deadPeers, m.stuckWrites, m.readErrors, m.logReads, m.closes, m.sendErrors, m.refused, m.feedErrors} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register live delivery metrics: %w", err)
		}
	}
	if err := reg.Register(m.messagesVec); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				if c, err := existing.GetMetricWithLabelValues("websocket"); err == nil {
					m.messages = c
					return nil
				}
			}
		}
		// Someone counts chat_messages_total differently: count ours under
		// a name of our own rather than refuse to start.
		m.messages = prometheus.NewCounter(prometheus.CounterOpts{Name: "chat_ws_messages_total", Help: "Messages accepted (stored) over WebSockets."})
		if err := reg.Register(m.messages); err != nil {
			return fmt.Errorf("register chat_ws_messages_total: %w", err)
		}
	}
	return nil
}

// feedFailReasons are the reasons chat_feed_errors_total counts; an
// engine's other reason is counted as "other", so the label set stays
// closed.
var feedFailReasons = []string{chat.FeedFailConnect, chat.FeedFailSubscribe, chat.FeedFailReceive, chat.FeedFailPlace}

func feedFailLabel(reason string) string {
	if slices.Contains(feedFailReasons, reason) {
		return reason
	}
	return "other"
}

func closeLabel(code websocket.StatusCode) string { return strconv.Itoa(int(code)) }
