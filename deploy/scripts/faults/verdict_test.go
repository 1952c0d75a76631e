package main

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// acked is a message answered 201 on its only try, as id on replica 0.
func acked(ch, text string, id int64, sec float64) sent {
	return sent{channel: ch, text: text, key: text, attempts: []sendAttempt{
		{outcome: "201", msg: message{ID: id, Channel: ch, Text: text}, started: at(sec), answered: at(sec + 0.01)},
	}}
}

func logOf(texts ...string) []message {
	out := make([]message, len(texts))
	for i, t := range texts {
		out[i] = message{ID: int64(i + 1), Channel: "c", Text: t}
	}
	return out
}

// TestJudgeSends: each way a send can be broken is counted and named, and a clean run
// has no problem.
func TestJudgeSends(t *testing.T) {
	retried := sent{channel: "c", text: "b", key: "b", attempts: []sendAttempt{
		{outcome: "503 outcome_unknown"}, {outcome: "timeout"},
		{outcome: "201", msg: message{ID: 2, Text: "b"}},
	}}
	unsettled := sent{channel: "c", text: "u", key: "u", attempts: []sendAttempt{{outcome: "503"}}}
	refused := sent{channel: "c", text: "r", key: "r", attempts: []sendAttempt{{outcome: "status 400", detail: "bad"}}}
	for _, tc := range []struct {
		name    string
		msgs    []sent
		log     []message
		check   func(v *verdict) bool
		problem string // "" when the verdict must be clean
	}{
		{"clean, a retry included", []sent{acked("c", "a", 1, 0), retried}, logOf("a", "b"),
			func(v *verdict) bool {
				return v.Acked == 2 && v.Retried == 1 && v.UnknownOutcome == 1 && v.Attempts == 4
			}, ""},
		{"stored twice", []sent{acked("c", "a", 1, 0), retried}, logOf("a", "b", "b"),
			func(v *verdict) bool { return v.Duplicates == 1 && v.Lost == 0 }, "stored twice"},
		{"acknowledged and lost", []sent{acked("c", "a", 1, 0), retried}, logOf("a"),
			func(v *verdict) bool { return v.Lost == 1 }, "acknowledged sends lost"},
		{"acknowledged as another id", []sent{acked("c", "a", 2, 0)}, logOf("a"),
			func(v *verdict) bool { return v.Lost == 1 }, "acknowledged as id 2"},
		{"unsettled, and stored", []sent{acked("c", "a", 1, 0), unsettled}, logOf("a", "u"),
			func(v *verdict) bool { return v.Unsettled == 1 && v.StoredUnacked == 1 }, "neither acknowledged nor refused"},
		{"refused", []sent{refused}, nil,
			func(v *verdict) bool { return v.Refused == 1 }, "refused: status 400"},
		{"a text nobody sent", []sent{acked("c", "a", 1, 0)}, logOf("a", "x"),
			func(v *verdict) bool { return v.Foreign == 1 }, "never sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &verdict{}
			judgeSends(v, tc.msgs, map[string][]message{"c": tc.log})
			if !tc.check(v) {
				t.Errorf("figures %+v", *v)
			}
			wantProblem(t, v, tc.problem)
		})
	}
}

// TestJudgeSubscribers: a subscriber must hold its channel's log exactly once, in order,
// with the log's text at each id.
func TestJudgeSubscribers(t *testing.T) {
	log := logOf("a", "b", "c", "d")
	for _, tc := range []struct {
		name    string
		sub     subscriberReport
		check   func(v *verdict) bool
		problem string
	}{
		{"whole log after a reconnect", subscriberReport{channel: "c", got: log, reconnects: 1},
			func(v *verdict) bool { return v.Reconnected == 1 && v.Reconnects == 1 && v.Missed == 0 }, ""},
		{"a gap", subscriberReport{channel: "c", got: []message{log[0], log[3]}, reconnects: 1},
			func(v *verdict) bool { return v.SubscribersMissing == 1 && v.Missed == 2 }, "missed 2 [2-3]"},
		{"a repeat", subscriberReport{channel: "c", got: []message{log[0], log[1], log[1], log[2], log[3]}},
			func(v *verdict) bool { return v.SubscribersRepeat == 1 && v.Repeated == 1 }, "repeated 1"},
		{"out of order", subscriberReport{channel: "c", got: []message{log[0], log[2], log[1], log[3]}},
			func(v *verdict) bool { return v.Repeated == 1 && v.Missed == 0 }, "repeated 1"},
		{"an id reused for another text", subscriberReport{channel: "c", got: []message{log[0], log[1], {ID: 3, Text: "lost"}, log[3]}},
			func(v *verdict) bool { return v.Mismatched == 1 }, "mismatched 1"},
		{"recovered:false", subscriberReport{channel: "c", got: log, reconnects: 1, notRecovered: 1},
			func(v *verdict) bool { return v.NotRecovered == 1 }, "recovered:false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &verdict{}
			judgeSubscribers(v, []subscriberReport{tc.sub}, map[string][]message{"c": log})
			if !tc.check(v) {
				t.Errorf("figures %+v", *v)
			}
			wantProblem(t, v, tc.problem)
		})
	}
}

// TestJudgeRecovery: recovery counts from the fault's end to the first 201 of a try
// started after it, per replica; a replica that never recovers fails the check.
func TestJudgeRecovery(t *testing.T) {
	try := func(replica int, start, answered float64, outcome string) sendAttempt {
		return sendAttempt{replica: replica, started: at(start), answered: at(answered), outcome: outcome}
	}
	msgs := []sent{
		{attempts: []sendAttempt{try(0, 0, 0.1, "201")}},
		// Tried during the fault and answered after its end: not a recovery.
		{attempts: []sendAttempt{try(1, 9, 10.5, "201")}},
		{attempts: []sendAttempt{try(0, 10.2, 10.7, "503"), try(1, 11, 11.5, "201")}},
		{attempts: []sendAttempt{try(0, 12, 12.5, "201")}},
	}
	v := &verdict{}
	judgeRecovery(v, msgs, 2, at(0), at(10))
	if v.FaultSeconds != 10 || !near(v.RecoverySeconds, 1.5) || !near(v.AllSeconds, 2.5) || !near(v.LongestNoAck, 10.4) {
		t.Errorf("fault %.2f, recovery %.2f, all %.2f, longest %.2f; want 10, 1.5, 2.5, 10.4", v.FaultSeconds, v.RecoverySeconds, v.AllSeconds, v.LongestNoAck)
	}
	wantProblem(t, v, "")

	v = &verdict{}
	judgeRecovery(v, msgs[:3], 2, at(0), at(10))
	wantProblem(t, v, "only 1 of 2 replicas")
}

func near(a, b float64) bool { return a-b < 0.001 && b-a < 0.001 }

func wantProblem(t *testing.T, v *verdict, want string) {
	t.Helper()
	all := strings.Join(v.Problems, "\n")
	switch {
	case want == "" && len(v.Problems) > 0:
		t.Errorf("problems on a clean run:\n%s", all)
	case want != "" && !strings.Contains(all, want):
		t.Errorf("problems %q, want one containing %q", all, want)
	}
}
