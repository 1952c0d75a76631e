package client

import (
	"bytes"
	"testing"
	"time"
)

// scanAll runs ScanFrame and returns what a message reader sees: every message's
// id and text, in order, and the other events' types.
func scanAll(t *testing.T, frame []byte) (ids []int64, texts []string, others []string) {
	t.Helper()
	err := ScanFrame(frame, func(id int64, text []byte) {
		ids, texts = append(ids, id), append(texts, string(text))
	}, func(ev Event) {
		if ev.Type == TypeMessage {
			ids, texts = append(ids, ev.Message.ID), append(texts, ev.Message.Text)
			return
		}
		others = append(others, ev.Type)
	})
	if err != nil {
		t.Fatalf("ScanFrame(%q): %v", frame, err)
	}
	return ids, texts, others
}

func TestScanFrameReadsWhatParseFrameReads(t *testing.T) {
	chatLine := `{"type":"message","channel":"bench","cursor":"42","message":{"id":42,"channel":"bench","user":{"id":"u_1","name":"text \"text\":\"x\"","role":"admin"},"text":"bench ab12 7 1700000000","created_at":"2026-11-24T09:00:00Z","bot":false}}`
	var lines [][]byte
	lines = append(lines, []byte(chatLine))
	for i, text := range []string{"plain", "", "with \"quotes\" and \\ backslash", "ünïcode ✓", "<html>&", "line\nbreak", `"text":"fake"`} {
		b, err := EncodeMessageEvent(Message{ID: int64(i + 1), Channel: "c", Text: text, CreatedAt: time.Unix(0, 0).UTC()})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	lines = append(lines,
		[]byte(`{"type":"hello","channel":"c","last_id":3}`),
		[]byte(`{"type":"error","code":"rate_limited","message":"slow down"}`),
		[]byte(`{"type":"presence","channel":"c","count":2}`))
	frame := bytes.Join(lines, []byte("\n"))

	var wantIDs []int64
	var wantTexts, wantOthers []string
	if err := ParseFrame(frame, func(ev Event) {
		if ev.Type == TypeMessage {
			wantIDs, wantTexts = append(wantIDs, ev.Message.ID), append(wantTexts, ev.Message.Text)
			return
		}
		wantOthers = append(wantOthers, ev.Type)
	}); err != nil {
		t.Fatal(err)
	}
	ids, texts, others := scanAll(t, frame)
	if len(ids) != len(wantIDs) || len(others) != len(wantOthers) {
		t.Fatalf("scan: %d messages, %v; parse: %d messages, %v", len(ids), others, len(wantIDs), wantOthers)
	}
	for i := range ids {
		if ids[i] != wantIDs[i] || texts[i] != wantTexts[i] {
			t.Errorf("message %d: scan (%d, %q), parse (%d, %q)", i, ids[i], texts[i], wantIDs[i], wantTexts[i])
		}
	}
	for i := range others {
		if others[i] != wantOthers[i] {
			t.Errorf("event %d: scan %q, parse %q", i, others[i], wantOthers[i])
		}
	}
	// The fast path took the unescaped lines, not only the fallback.
	fast := 0
	_ = ScanFrame(frame, func(int64, []byte) { fast++ }, func(Event) {})
	if fast < 4 { // the chat's line, "plain", "" and "ünïcode ✓"; the others carry escapes
		t.Fatalf("only %d lines read without decoding", fast)
	}
}

func TestScanFrameRefusesWhatParseFrameRefuses(t *testing.T) {
	for _, bad := range []string{`{"type":"message","message":{"id":1,"text":"x"`, `{"type":"message"}`, `not json`} {
		if err := ScanFrame([]byte(bad), func(int64, []byte) {}, func(Event) {}); err == nil && ParseFrame([]byte(bad), func(Event) {}) != nil {
			t.Errorf("%q: ScanFrame accepted what ParseFrame refuses", bad)
		}
	}
}

func FuzzScanFrame(f *testing.F) {
	f.Add(int64(7), "bench ab12 7 1700000000")
	f.Add(int64(0), `a"b\c`)
	f.Fuzz(func(t *testing.T, id int64, text string) {
		if id < 0 {
			id = -id
		}
		b, err := EncodeMessageEvent(Message{ID: id, Text: text})
		if err != nil {
			t.Skip()
		}
		var want Event
		if err := ParseFrame(b, func(ev Event) { want = ev }); err != nil {
			t.Skip()
		}
		ids, texts, _ := scanAll(t, b)
		if len(ids) != 1 || ids[0] != want.Message.ID || texts[0] != want.Message.Text {
			t.Fatalf("scan %v %q, parse %d %q", ids, texts, want.Message.ID, want.Message.Text)
		}
	})
}

func BenchmarkScanFrame(b *testing.B) {
	line := []byte(`{"type":"message","channel":"bench","cursor":"42","message":{"id":42,"channel":"bench","user":{"id":"u_1","name":"broadcaster","role":"broadcaster"},"text":"bench ab12 7 1700000000","created_at":"2026-11-24T09:00:00.000Z","bot":false}}`)
	frame := bytes.Join([][]byte{line, line, line, line}, []byte("\n"))
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			_ = ScanFrame(frame, func(int64, []byte) {}, func(Event) {})
		}
	})
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			_ = ParseFrame(frame, func(Event) {})
		}
	})
}
