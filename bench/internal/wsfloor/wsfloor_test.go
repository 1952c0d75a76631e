package wsfloor

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	chatclient "github.com/apistack/platform/services/chat/client"
)

func TestBroadcastDropsForFullBuffersAndCountsThem(t *testing.T) {
	s := New(Options{Buffer: 2})
	stuck := &subscriber{frames: make(chan []byte, 2)}
	other := &subscriber{frames: make(chan []byte, 10)}
	s.add("c", stuck)
	s.add("elsewhere", other)
	for i := 0; i < 5; i++ {
		if _, err := s.broadcast(chatclient.SendBody{Message: "m", Channel: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	if st.Published != 5 || st.Queued != 2 || st.Dropped != 3 || st.Subscribers != 2 {
		t.Fatalf("stats %+v", st)
	}
	if len(other.frames) != 0 {
		t.Fatal("a subscriber of another channel got frames")
	}
	var ids []int64
	for len(stuck.frames) > 0 {
		_ = chatclient.ParseFrame(<-stuck.frames, func(e chatclient.Event) { ids = append(ids, e.Message.ID) })
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 2 {
		t.Fatalf("queued ids %v, want [1 2]", ids)
	}
	s.remove("c", stuck)
	if s.Stats().Subscribers != 1 {
		t.Fatal("remove did not count")
	}
}

func TestSendAnswers(t *testing.T) {
	h := New(Options{}).Handler()
	cases := []struct {
		body string
		want int
	}{
		{`{"message":"hi","channel":"c"}`, http.StatusCreated},
		{`{"message":"","channel":"c"}`, http.StatusBadRequest},
		{`{"message":"hi"}`, http.StatusBadRequest},
		{`not json`, http.StatusBadRequest},
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, chatclient.SendPath, strings.NewReader(tc.body)))
		if rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.body, rec.Code, tc.want)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, chatclient.WSPath, nil))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("subscribe without channel: %d", rec.Code)
	}
}
