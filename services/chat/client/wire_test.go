package client

import (
	"strings"
	"testing"
	"time"
)

func TestParseFrameReadsEveryObjectAndIgnoresUnknownTypes(t *testing.T) {
	frame := `{"type":"hello","last_id":41,"recovered":true}
{"type":"message","message":{"id":42,"channel":"general","text":"bench r1 0 17","user":{"id":"u1","name":"ann","role":"viewer"},"created_at":"2026-01-02T03:04:05Z","bot":false}}

{"type":"typing","user":"x"}
{"type":"presence","count":7}
{"type":"error","code":"rate_limited","message":"slow down"}
{"type":"message","message":{"id":43,"channel":"general","text":"hi","user":{"id":"b","name":"bot","role":"bot"},"created_at":"2026-01-02T03:04:06Z","bot":true}}`
	var got []Event
	if err := ParseFrame([]byte(frame), func(e Event) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("got %d events, want 6: %+v", len(got), got)
	}
	if got[0].Type != TypeHello || got[0].LastID != "41" || !got[0].Recovered {
		t.Errorf("hello = %+v", got[0])
	}
	m := got[1].Message
	if m == nil || m.ID != 42 || m.Text != "bench r1 0 17" || m.User.Name != "ann" || !m.CreatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("message = %+v", m)
	}
	if got[2].Type != "typing" || got[2].Message != nil {
		t.Errorf("unknown = %+v", got[2])
	}
	if got[3].Count != 7 {
		t.Errorf("presence = %+v", got[3])
	}
	if got[4].Code != "rate_limited" || got[4].ErrorText != "slow down" {
		t.Errorf("error = %+v", got[4])
	}
	if !got[5].Message.Bot {
		t.Errorf("bot message = %+v", got[5].Message)
	}
}

func TestParseFrameRejectsBrokenJSON(t *testing.T) {
	err := ParseFrame([]byte("{\"type\":\"presence\",\"count\":1}\n{nope"), func(Event) {})
	if err == nil {
		t.Fatal("broken object accepted")
	}
}

func TestEncodedMessageEventParsesBack(t *testing.T) {
	in := Message{ID: 9, Channel: "c", Text: "t", User: User{ID: "1", Name: "n", Role: "r"}, CreatedAt: time.Unix(5, 0).UTC()}
	b, err := EncodeMessageEvent(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "\n") {
		t.Fatal("event holds a newline")
	}
	var out *Message
	if err := ParseFrame(b, func(e Event) { out = e.Message }); err != nil {
		t.Fatal(err)
	}
	if out == nil || *out != in {
		t.Errorf("round trip %+v, want %+v", out, in)
	}
}

func TestURLs(t *testing.T) {
	got, err := WSURL("http://127.0.0.1:8080/", "general chat", "12")
	if err != nil {
		t.Fatal(err)
	}
	if got != "ws://127.0.0.1:8080/api/v1/ws?channel=general+chat&since=12" {
		t.Errorf("WSURL = %q", got)
	}
	if got, _ := WSURL("http://[::1]:9", "x", ""); got != "ws://[::1]:9/api/v1/ws?channel=x" {
		t.Errorf("WSURL = %q", got)
	}
	if SendURL("http://127.0.0.1:8080/") != "http://127.0.0.1:8080/api/v1/messages/send" {
		t.Error(SendURL("http://127.0.0.1:8080/"))
	}
}

func TestParseFrameToleratesOtherShapesInUnknownEvents(t *testing.T) {
	frame := `{"type":"future_event","message":42}
{"type":"user_banned","count":"x"}`
	var types []string
	if err := ParseFrame([]byte(frame), func(e Event) { types = append(types, e.Type) }); err != nil {
		t.Fatal(err)
	}
	if len(types) != 2 || types[0] != "future_event" {
		t.Fatalf("types %v", types)
	}
	if err := ParseFrame([]byte(`{"type":"message","message":"oops"}`), func(Event) {}); err == nil {
		t.Error("message event with a string message accepted")
	}
	if err := ParseFrame([]byte(`{"type":"message"}`), func(Event) {}); err == nil {
		t.Error("message event without message accepted")
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add([]byte(`{"type":"hello","last_id":1,"recovered":true}` + "\n" + `{"type":"presence","count":2}`))
	f.Add([]byte(`{"type":"message","message":{"id":1,"text":"x","created_at":"2026-01-01T00:00:00Z"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = ParseFrame(b, func(e Event) {
			if e.Type == TypeMessage && e.Message == nil {
				t.Fatal("message event without message")
			}
		})
	})
}

func TestParseFrameReadsShieldMode(t *testing.T) {
	frame := `{"type":"shield_mode","channel":"raid","cursor":"12-1.0badf00d","shield":{"on":true,"auto":true,"until":"2026-01-02T03:09:05Z","by":{"id":"automod","name":"automod","role":"moderator"},"reason":"30 first-time chatters within 1m0s","at":"2026-01-02T03:04:05Z"}}
{"type":"shield_mode","channel":"raid","cursor":"20-1.0badf00e","shield":{"on":false,"auto":true,"by":{"id":"automod","name":"automod","role":"moderator"},"at":"2026-01-02T03:09:06Z"}}`
	var got []Event
	if err := ParseFrame([]byte(frame), func(e Event) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Type != TypeShieldMode || got[0].Shield == nil || !got[0].Shield.On || !got[0].Shield.Auto ||
		got[0].Shield.Until == nil || !got[0].Shield.At.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("on = %+v", got)
	}
	if got[1].Shield == nil || got[1].Shield.On || got[1].Shield.Until != nil {
		t.Fatalf("off = %+v", got[1])
	}
}
