package raid

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestSignHS256 checks the token's shape, header, claims and signature, computed
// apart from SignHS256 (the raid runs prove the chat service takes them: a refused
// token is a failed send there).
func TestSignHS256(t *testing.T) {
	secret := []byte("bench-jwt-secret-0123456789abcdef0123456789")
	tok := SignHS256(secret, map[string]any{"sub": "raider-1", "name": "raider1", "exp": 1900000000})
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts", tok, len(parts))
	}
	enc := base64.RawURLEncoding
	var header, claims map[string]any
	for i, dst := range []*map[string]any{&header, &claims} {
		b, err := enc.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatal(err)
		}
	}
	if header["alg"] != "HS256" || header["typ"] != "JWT" {
		t.Fatalf("header = %v", header)
	}
	if claims["sub"] != "raider-1" || claims["name"] != "raider1" || claims["exp"] != float64(1900000000) {
		t.Fatalf("claims = %v", claims)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if got, want := parts[2], enc.EncodeToString(mac.Sum(nil)); got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
	if other := SignHS256([]byte("another secret of the same length, more or less"), map[string]any{"sub": "raider-1", "name": "raider1", "exp": 1900000000}); other == tok {
		t.Fatal("the secret does not change the signature")
	}
}

func TestPerSendSumsTheRunsOfAChannel(t *testing.T) {
	r := &CostResult{Runs: []CostRun{
		{Channel: "a", Sends: 100, ChatCPU: 30 * time.Millisecond, RedisCPU: 10 * time.Millisecond},
		{Channel: "b", Sends: 100, ChatCPU: 90 * time.Millisecond},
		{Channel: "a", Sends: 300, ChatCPU: 50 * time.Millisecond, RedisCPU: 30 * time.Millisecond},
	}}
	chat, redis := r.PerSend("a")
	if chat != 200*time.Microsecond || redis != 100*time.Microsecond {
		t.Fatalf("per send = %s, %s", chat, redis)
	}
	if c, _ := r.PerSend("none"); c != 0 {
		t.Fatalf("no runs = %s", c)
	}
}
