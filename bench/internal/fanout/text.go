// Package fanout measures WebSocket fan-out: subscribers spread over replicas, a sender
// posting timestamped, numbered messages, and per-subscriber loss and duplicate counts.
package fanout

import (
	"strconv"
	"strings"
	"time"
)

// Message texts are "bench <runid> <seq> <unixnano>" for measured messages and
// "bench <runid> w<k> <unixnano>" for warm-up messages that only prove a subscriber
// is live. The run id keeps messages of other runs (history replays) out of the count.
const textPrefix = "bench "

// FormatText is the text of measured message seq sent at t.
func FormatText(runID string, seq int64, t time.Time) string {
	return textPrefix + runID + " " + strconv.FormatInt(seq, 10) + " " + strconv.FormatInt(t.UnixNano(), 10)
}

// FormatWarmup is the text of warm-up message k sent at t.
func FormatWarmup(runID string, k int, t time.Time) string {
	return textPrefix + runID + " w" + strconv.Itoa(k) + " " + strconv.FormatInt(t.UnixNano(), 10)
}

// Text is a parsed benchmark message text.
type Text struct {
	RunID    string
	Seq      int64 // -1 for warm-up messages
	Warmup   bool
	SentNano int64
}

// ParseText reads a benchmark message text; ok is false for any other text.
func ParseText(s string) (Text, bool) {
	rest, ok := strings.CutPrefix(s, textPrefix)
	if !ok {
		return Text{}, false
	}
	runID, rest, ok := strings.Cut(rest, " ")
	if !ok || runID == "" {
		return Text{}, false
	}
	seqS, nanoS, ok := strings.Cut(rest, " ")
	if !ok {
		return Text{}, false
	}
	nano, err := strconv.ParseInt(nanoS, 10, 64)
	if err != nil || nano <= 0 {
		return Text{}, false
	}
	t := Text{RunID: runID, SentNano: nano, Seq: -1}
	if k, isWarm := strings.CutPrefix(seqS, "w"); isWarm {
		if _, err := strconv.Atoi(k); err != nil {
			return Text{}, false
		}
		t.Warmup = true
		return t, true
	}
	seq, err := strconv.ParseInt(seqS, 10, 64)
	if err != nil || seq < 0 {
		return Text{}, false
	}
	t.Seq = seq
	return t, true
}
