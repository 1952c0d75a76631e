package fanout

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
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
