package hs256

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// TestSign checks the token's shape, header, claims and signature, computed apart
// from Sign (the raid runs prove the chat service takes them: a refused token is a
// failed send there; TestFanoutSpeaksCentrifugo that Centrifugo's check does).
func TestSign(t *testing.T) {
	secret := []byte("bench-jwt-secret-0123456789abcdef0123456789")
	tok := must(Sign(secret, map[string]any{"sub": "raider-1", "name": "raider1", "exp": 1900000000}))
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
	if other := must(Sign([]byte("another secret of the same length, more or less"), map[string]any{"sub": "raider-1", "name": "raider1", "exp": 1900000000})); other == tok {
		t.Fatal("the secret does not change the signature")
	}
}

func must(tok string, err error) string {
	if err != nil {
		panic(err)
	}
	return tok
}
