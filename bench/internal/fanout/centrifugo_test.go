package fanout

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestCentrifugoTokenIsHS256OfItsClaims(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tok, err := centrifugoToken("secret", "bench-7", now)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q: want three parts", tok)
	}
	mac := hmac.New(sha256.New, []byte("secret"))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if want := base64.RawURLEncoding.EncodeToString(mac.Sum(nil)); parts[2] != want {
		t.Fatalf("signature %q, want %q", parts[2], want)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Sub string `json:"sub"`
		Exp int64  `json:"exp"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Sub != "bench-7" || claims.Exp != now.Add(centrifugoTokenTTL).Unix() {
		t.Fatalf("claims %+v", claims)
	}
	if _, err := centrifugoToken("", "x", now); err == nil {
		t.Error("token signed without a secret")
	}
}

func TestScanCentrifugo(t *testing.T) {
	frame := []byte(`{"id":1,"connect":{"client":"c","version":"6.9.1"}}
{"id":2,"subscribe":{}}
{}
{"push":{"channel":"bench","pub":{"data":{"text":"bench r1 5 123"}}}}
{"push":{"channel":"bench","join":{"info":{"user":"u"}}}}
{"id":3,"error":{"code":103,"message":"permission denied"}}
`)
	var texts, codes []string
	pings := 0
	err := scanCentrifugo(frame, func(b []byte) { texts = append(texts, string(b)) }, func() { pings++ },
		func(code string) { codes = append(codes, code) })
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) != 1 || texts[0] != "bench r1 5 123" || pings != 1 || len(codes) != 1 || codes[0] != "centrifugo 103" {
		t.Fatalf("texts %q, pings %d, codes %q", texts, pings, codes)
	}
	if err := scanCentrifugo([]byte(`{"push":{"pub":{"data":{"text":"a\"b"}}}}`), func([]byte) {}, func() {}, func(string) {}); err == nil {
		t.Error("escaped text read without error")
	}
	if err := scanCentrifugo([]byte("garbage"), func([]byte) {}, func() {}, func(string) {}); err == nil {
		t.Error("non-JSON frame accepted")
	}
}

func TestCentrifugoPublishBody(t *testing.T) {
	b, err := centrifugoPublishBody("bench r 1 2", "room")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Channel string            `json:"channel"`
		Data    map[string]string `json:"data"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Channel != "room" || got.Data["text"] != "bench r 1 2" {
		t.Fatalf("%s: %+v %v", b, got, err)
	}
	if !centrifugoPublishFailed([]byte(`{"error":{"code":102,"message":"unknown channel"}}`)) || centrifugoPublishFailed([]byte(`{"result":{}}`)) {
		t.Error("publish answers misread")
	}
}

func TestConfigRejectsUnknownProtocol(t *testing.T) {
	for _, c := range []Config{
		{SubscribeBases: []string{"http://127.0.0.1:1"}, Subscribers: 1, Duration: time.Second, Rate: 1, Protocol: "mqtt"},
		{SubscribeBases: []string{"http://127.0.0.1:1"}, Subscribers: 1, Duration: time.Second, Rate: 1, Protocol: ProtocolCentrifugo},
	} {
		if err := c.fill(); err == nil {
			t.Errorf("protocol %q (secret %q) accepted", c.Protocol, c.HMACSecret)
		}
	}
}

// fakeCentrifugo speaks the part of Centrifugo's protocol the generator uses: it checks
// the connection token's signature and the API key, pings every new connection once
// and counts the answers, and pushes each publication to the channel's subscribers.
type fakeCentrifugo struct {
	secret, apiKey string
	mu             sync.Mutex
	subs           map[string][]*websocket.Conn
	pongs          atomic.Int64
	badTokens      atomic.Int64
}

func (f *fakeCentrifugo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case centrifugoWSPath:
		f.socket(w, r)
	case centrifugoPublishPath:
		if r.Header.Get("X-API-Key") != f.apiKey {
			_, _ = w.Write([]byte(`{"error":{"code":401,"message":"unauthorized"}}`))
			return
		}
		var body struct {
			Channel string          `json:"channel"`
			Data    json.RawMessage `json:"data"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		push := []byte(`{"push":{"channel":"` + body.Channel + `","pub":{"data":` + string(body.Data) + `}}}`)
		f.mu.Lock()
		conns := append([]*websocket.Conn(nil), f.subs[body.Channel]...)
		f.mu.Unlock()
		for _, c := range conns {
			_ = c.Write(r.Context(), websocket.MessageText, push)
		}
		_, _ = w.Write([]byte(`{"result":{}}`))
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeCentrifugo) socket(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := context.Background()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var cmd struct {
			ID      int               `json:"id"`
			Connect map[string]string `json:"connect"`
			Sub     map[string]string `json:"subscribe"`
		}
		switch {
		case string(b) == "{}":
			f.pongs.Add(1)
		case json.Unmarshal(b, &cmd) != nil:
			return
		case cmd.Connect != nil:
			parts := strings.Split(cmd.Connect["token"], ".")
			mac := hmac.New(sha256.New, []byte(f.secret))
			mac.Write([]byte(strings.Join(parts[:min(2, len(parts))], ".")))
			if len(parts) != 3 || parts[2] != base64.RawURLEncoding.EncodeToString(mac.Sum(nil)) {
				f.badTokens.Add(1)
				_ = c.Write(ctx, websocket.MessageText, []byte(`{"id":1,"error":{"code":109,"message":"token expired"}}`))
				return
			}
			_ = c.Write(ctx, websocket.MessageText, []byte(`{"id":1,"connect":{"client":"x","version":"fake"}}`+"\n{}"))
		case cmd.Sub != nil:
			f.mu.Lock()
			f.subs[cmd.Sub["channel"]] = append(f.subs[cmd.Sub["channel"]], c)
			f.mu.Unlock()
			_ = c.Write(ctx, websocket.MessageText, []byte(`{"id":2,"subscribe":{}}`))
		}
	}
}

func TestFanoutSpeaksCentrifugo(t *testing.T) {
	fake := &fakeCentrifugo{secret: "hmac-secret", apiKey: "api-key", subs: map[string][]*websocket.Conn{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := Config{
		SubscribeBases: []string{srv.URL}, Subscribers: 10, Rate: 100, Duration: 300 * time.Millisecond,
		Grace: 20 * time.Second, Token: "api-key", Protocol: ProtocolCentrifugo, HMACSecret: "hmac-secret",
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Subscribers != 10 || res.Ready != 10 || len(res.ErrorEvents) != 0 || res.BadFrames != 0 {
		t.Fatalf("connected %d ready %d, error events %v, bad frames %d", res.Subscribers, res.Ready, res.ErrorEvents, res.BadFrames)
	}
	if res.Sent != 30 || res.Delivered != 300 || res.Lost != 0 || res.Duplicated != 0 || len(res.SendErrors) != 0 {
		t.Fatalf("sent %d delivered %d lost %d dup %d send errors %v", res.Sent, res.Delivered, res.Lost, res.Duplicated, res.SendErrors)
	}
	if fake.pongs.Load() != 10 || fake.badTokens.Load() != 0 {
		t.Fatalf("pongs %d (want one per socket), bad tokens %d", fake.pongs.Load(), fake.badTokens.Load())
	}

	// a wrong API key: every publish fails, in the answer's body, and is counted so
	cfg.Token, cfg.Duration, cfg.WarmupTimeout, cfg.Grace = "wrong", 100*time.Millisecond, 300*time.Millisecond, time.Second
	if res, err = Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if res.Sent != 0 || res.SendErrors["publish error"] != 10 || res.Delivered != 0 {
		t.Fatalf("wrong key: sent %d, send errors %v, delivered %d", res.Sent, res.SendErrors, res.Delivered)
	}
	// a wrong HMAC secret: the server refuses the token
	cfg.Token, cfg.HMACSecret = "api-key", "other-secret"
	if res, err = Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if res.Ready != 0 || res.ErrorEvents["centrifugo 109"] == 0 || fake.badTokens.Load() == 0 {
		t.Fatalf("wrong secret: ready %d, error events %v, bad tokens %d", res.Ready, res.ErrorEvents, fake.badTokens.Load())
	}
}
