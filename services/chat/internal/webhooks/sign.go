package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (standardwebhooks.com).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// secretPrefix marks a Standard Webhooks secret: the rest is the key in
// standard base64.
const secretPrefix = "whsec_"

// KeySize is the length of a generated signing key (the spec allows 24 to
// 64 bytes).
const KeySize = 32

// NewSecret returns a fresh secret in the whsec_ form.
func NewSecret() (string, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return "", err
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(k), nil
}

// SecretKey returns the key of a whsec_ secret.
func SecretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, errors.New("webhook secret must start with " + secretPrefix)
	}
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(k) == 0 {
		return nil, errors.New("webhook secret is not base64 after " + secretPrefix)
	}
	return k, nil
}

// Sign returns the webhook-signature value of body sent as id at ts:
// "v1," + base64(HMAC-SHA256(key, id.ts.body)).
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SetHeaders signs body as id at ts and sets the three headers and the
// content type on h.
func SetHeaders(h http.Header, key []byte, id string, ts time.Time, body []byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, Sign(key, id, ts, body))
	h.Set("Content-Type", "application/json")
}
