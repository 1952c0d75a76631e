package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// subscriberReport is what one live client received.
type subscriberReport struct {
	channel      string
	got          []message
	reconnects   int
	notRecovered int
	drops        []string
	dialErrors   int
	lastDialErr  string
}

// verdict holds one fault's figures. Every field after the name is a count or a time
// the checks read; problems lists each failure in words.
type verdict struct {
	Fault   string `json:"fault"`
	Command string `json:"command"`

	Messages       int `json:"messages"`        // messages the senders sent (one key each)
	Acked          int `json:"acked"`           // answered 201
	Attempts       int `json:"attempts"`        // every try, retries included
	Retried        int `json:"retried"`         // messages that needed more than one try
	UnknownOutcome int `json:"outcome_unknown"` // 503s that said outcome_unknown
	Unsettled      int `json:"unsettled"`       // neither acknowledged nor refused when the test ended
	Refused        int `json:"refused"`         // answered 4xx other than 429: the driver's or the server's bug
	Lost           int `json:"lost"`            // acknowledged, not in the log (or at another id)
	Duplicates     int `json:"duplicates"`      // extra copies of a text in the log
	StoredUnacked  int `json:"stored_unacked"`  // in the log though never acknowledged (an unsettled send)
	Foreign        int `json:"foreign"`         // in the log but never sent by this run

	Subscribers        int `json:"subscribers"`
	Reconnected        int `json:"reconnected"`          // subscribers whose socket dropped and who resumed with since=
	Reconnects         int `json:"reconnects"`           // resumptions in all
	NotRecovered       int `json:"not_recovered"`        // hellos that answered since= with recovered:false
	SubscribersMissing int `json:"subscribers_missing"`  // subscribers that missed a message of the log
	SubscribersRepeat  int `json:"subscribers_repeated"` // subscribers that got a message twice or out of order
	Missed             int `json:"missed"`               // messages missed, over every subscriber
	Repeated           int `json:"repeated"`             // extra or out-of-order deliveries, over every subscriber
	Mismatched         int `json:"mismatched"`           // delivered with an id the log gives to another text

	FaultSeconds    float64 `json:"fault_seconds"`    // from the fault's start to its end (the heal command returned)
	RecoverySeconds float64 `json:"recovery_seconds"` // from the fault's end to the first 201 of a try started after it
	AllSeconds      float64 `json:"all_replicas_seconds"`
	LongestNoAck    float64 `json:"longest_without_ack_seconds"` // the longest time no send was acknowledged
	Outcomes        string  `json:"outcomes"`                    // every try's outcome, counted

	Failed   []string `json:"failed,omitempty"`   // the checks that failed, by short name
	Problems []string `json:"problems,omitempty"` // what each failure was, in words
}

// fail records a failed check: its short name (for the table) and what was wrong.
func (v *verdict) fail(check, format string, args ...any) {
	if !slices.Contains(v.Failed, check) {
		v.Failed = append(v.Failed, check)
	}
	v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
}

// judgeSends compares what the senders were told with the channels' final logs.
func judgeSends(v *verdict, msgs []sent, logs map[string][]message) {
	type place struct {
		channel string
		ids     []int64
	}
	stored := map[string]*place{} // text -> where the log holds it
	for ch, log := range logs {
		for _, m := range log {
			p := stored[m.Text]
			if p == nil {
				p = &place{channel: ch}
				stored[m.Text] = p
			}
			p.ids = append(p.ids, m.ID)
		}
	}
	outcomes := map[string]int{}
	sentTexts := map[string]bool{}
	var lost, dups []string
	for _, m := range msgs {
		v.Messages++
		sentTexts[m.text] = true
		v.Attempts += len(m.attempts)
		if len(m.attempts) > 1 {
			v.Retried++
		}
		for _, a := range m.attempts {
			outcomes[a.outcome]++
			if strings.HasSuffix(a.outcome, reasonOutcomeUnknown) {
				v.UnknownOutcome++
			}
		}
		p := stored[m.text]
		if p != nil && len(p.ids) > 1 {
			v.Duplicates += len(p.ids) - 1
			dups = append(dups, fmt.Sprintf("%q at ids %v of %s (tries: %s)", m.text, p.ids, p.channel, tries(m)))
		}
		ack, ok := m.ack()
		switch {
		case ok:
			v.Acked++
			if p == nil || p.channel != m.channel || !slices.Contains(p.ids, ack.msg.ID) {
				v.Lost++
				where := "not in the log"
				if p != nil {
					where = fmt.Sprintf("in %s at ids %v", p.channel, p.ids)
				}
				lost = append(lost, fmt.Sprintf("%q acknowledged as id %d of %s, %s (tries: %s)", m.text, ack.msg.ID, m.channel, where, tries(m)))
			}
		case len(m.attempts) == 0 || m.attempts[len(m.attempts)-1].retryable():
			v.Unsettled++
			if p != nil {
				v.StoredUnacked++
			}
		default:
			v.Refused++
			if p != nil {
				v.StoredUnacked++
			}
			last := m.attempts[len(m.attempts)-1]
			v.fail("refused", "send %q refused: %s %s", m.text, last.outcome, last.detail)
		}
	}
	for text := range stored {
		if !sentTexts[text] {
			v.Foreign++
		}
	}
	v.Outcomes = countList(outcomes)
	if v.Lost > 0 {
		v.fail("lost", "%d acknowledged sends lost: %s", v.Lost, firstFew(lost))
	}
	if v.Duplicates > 0 {
		v.fail("stored twice", "%d messages stored twice or more: %s", v.Duplicates, firstFew(dups))
	}
	if v.Unsettled > 0 {
		v.fail("unsettled", "%d sends neither acknowledged nor refused by the end of the test", v.Unsettled)
	}
	if v.Foreign > 0 {
		v.fail("foreign", "%d texts in the log that this run never sent", v.Foreign)
	}
}

// judgeSubscribers compares what each live client received with its channel's final
// log. The channels are new and every client connected before the first send, so each
// must have received the whole log, in order, once.
func judgeSubscribers(v *verdict, subs []subscriberReport, logs map[string][]message) {
	var problems []string
	for i, s := range subs {
		v.Subscribers++
		v.Reconnects += s.reconnects
		if s.reconnects > 0 {
			v.Reconnected++
		}
		v.NotRecovered += s.notRecovered
		log := logs[s.channel]
		text := make(map[int64]string, len(log))
		for _, m := range log {
			text[m.ID] = m.Text
		}
		seen := map[int64]int{}
		repeated, mismatched := 0, 0
		var last int64
		for _, m := range s.got {
			seen[m.ID]++
			if seen[m.ID] > 1 || m.ID <= last {
				repeated++
			}
			last = max(last, m.ID)
			if t, ok := text[m.ID]; !ok || t != m.Text {
				mismatched++
			}
		}
		var missing []int64
		for _, m := range log {
			if seen[m.ID] == 0 {
				missing = append(missing, m.ID)
			}
		}
		v.Missed += len(missing)
		v.Repeated += repeated
		v.Mismatched += mismatched
		if len(missing) > 0 {
			v.SubscribersMissing++
		}
		if repeated > 0 {
			v.SubscribersRepeat++
		}
		if len(missing) > 0 || repeated > 0 || mismatched > 0 {
			problems = append(problems, fmt.Sprintf("subscriber %d (%s, %d reconnects, drops %v, %d dial errors%s): missed %d %s, repeated %d, mismatched %d",
				i+1, s.channel, s.reconnects, s.drops, s.dialErrors, lastErr(s), len(missing), idRanges(missing), repeated, mismatched))
		}
	}
	if len(problems) > 0 {
		v.fail("subscribers", "%d of %d subscribers did not get their channel's log exactly once, in order: %s", len(problems), len(subs), firstFew(problems))
	}
	if v.NotRecovered > 0 {
		v.fail("recovered:false", "%d reconnections with since= answered recovered:false", v.NotRecovered)
	}
}

// judgeRecovery derives the recovery times from the tries' timestamps.
func judgeRecovery(v *verdict, msgs []sent, replicas int, faultStart, faultEnd time.Time) {
	v.FaultSeconds = faultEnd.Sub(faultStart).Seconds()
	var acks []time.Time
	first := map[int]time.Time{}
	for _, m := range msgs {
		for _, a := range m.attempts {
			if !a.acked() {
				continue
			}
			acks = append(acks, a.answered)
			if !a.started.Before(faultEnd) {
				if t, ok := first[a.replica]; !ok || a.answered.Before(t) {
					first[a.replica] = a.answered
				}
			}
		}
	}
	var earliest, latest time.Time
	for _, t := range first {
		if earliest.IsZero() || t.Before(earliest) {
			earliest = t
		}
		latest = later(latest, t)
	}
	if earliest.IsZero() {
		v.RecoverySeconds, v.AllSeconds = -1, -1
		v.fail("recovery", "no send was acknowledged after the fault ended")
	} else {
		v.RecoverySeconds = earliest.Sub(faultEnd).Seconds()
		v.AllSeconds = latest.Sub(faultEnd).Seconds()
		if len(first) < replicas {
			v.AllSeconds = -1
			v.fail("recovery", "only %d of %d replicas acknowledged a send after the fault ended", len(first), replicas)
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].Before(acks[j]) })
	for i := 1; i < len(acks); i++ {
		v.LongestNoAck = max(v.LongestNoAck, acks[i].Sub(acks[i-1]).Seconds())
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func tries(m sent) string {
	var parts []string
	for _, a := range m.attempts {
		parts = append(parts, fmt.Sprintf("r%d %s", a.replica+1, a.outcome))
	}
	return strings.Join(parts, ", ")
}

func lastErr(s subscriberReport) string {
	if s.lastDialErr == "" {
		return ""
	}
	return ", last: " + s.lastDialErr
}

func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

func firstFew(items []string) string {
	const n = 5
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
}

// idRanges writes sorted ids as ranges: [3-7 9].
func idRanges(ids []int64) string {
	if len(ids) == 0 {
		return "[]"
	}
	var parts []string
	start := ids[0]
	for i := 1; i <= len(ids); i++ {
		if i < len(ids) && ids[i] == ids[i-1]+1 {
			continue
		}
		if start == ids[i-1] {
			parts = append(parts, fmt.Sprint(start))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", start, ids[i-1]))
		}
		if i < len(ids) {
			start = ids[i]
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}
