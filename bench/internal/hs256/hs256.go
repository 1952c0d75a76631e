// Package hs256 signs the HS256 JWTs the load generators present: chat's platform
// tokens (CHAT_JWT_SECRET) and Centrifugo's connection tokens
// (client.token.hmac_secret_key) have the same form.
package hs256

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Sign returns a compact JWT of claims signed with HMAC-SHA256 under secret.
func Sign(secret []byte, claims any) (string, error) {
	enc := base64.RawURLEncoding
	body, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("hs256: encode claims: %w", err)
	}
	signing := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(body)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil)), nil
}
