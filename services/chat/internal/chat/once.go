package chat

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// A client that does not learn whether its send was stored (its request
// timed out, the answer was a 503 outcome_unknown, the connection dropped)
// sends it again with the same idempotency key, and gets the first result:
// the message is stored once however often it is sent. The store keeps
// what a send under a key stored (a record, in the channel's slot) for
// IdempotencyWindow; the record is written in the same atomic step as the
// message, so a send either stored the message and its record or neither.

// IdempotencyWindow is how long a send's idempotency key is remembered.
// Retries come within seconds or minutes; a key seen again after the
// window is a new send.
const IdempotencyWindow = 10 * time.Minute

// MaxIdempotencyKeyLen bounds an idempotency key (its characters are
// A-Z, a-z, 0-9 and . _ : -): a UUID or a ULID fits, with room for a prefix.
const MaxIdempotencyKeyLen = 64

// Reasons of the errors a send under an idempotency key can meet.
const (
	// ReasonKeyInUse: another send with the same key was stored between
	// this one's read and its write (two copies of one request raced):
	// 409; retrying returns the stored result.
	ReasonKeyInUse = "idempotency_key_in_use"
	// ReasonKeyReused: the key was used with another message: 422.
	ReasonKeyReused = "idempotency_key_reused"
)

// OncePart names which result of a send an append records under its key.
type OncePart string

// Parts of a send's record.
const (
	OnceMessage OncePart = "m" // the sender's message
	OnceReply   OncePart = "r" // the bot's reply to it
)

// Once makes an append happen at most once under Key. The zero Once does
// nothing. An engine keeps the record in the message's channel, so a key
// is scoped to a channel (and by Service, to the sender).
type Once struct {
	Key  string
	Part OncePart
	// Fingerprint identifies what the request carried (OnceMessage only),
	// so a key sent again with another message is told apart.
	Fingerprint string
	// For is how long the record is kept (IdempotencyWindow).
	For time.Duration
}

// Set reports whether o asks for anything.
func (o Once) Set() bool { return o.Key != "" }

// OnceRecord is what sends under one key stored: nil parts were not stored.
type OnceRecord struct {
	Fingerprint string
	Message     *Message
	Reply       *Message
}

// Found reports whether a send under the key stored its message.
func (r OnceRecord) Found() bool { return r.Message != nil }

// validIdempotencyKey checks a key's length and characters.
func validIdempotencyKey(k string) error {
	if len(k) == 0 || len(k) > MaxIdempotencyKeyLen {
		return Invalid("idempotency_key", fmt.Sprintf("must be 1..%d characters", MaxIdempotencyKeyLen))
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return Invalid("idempotency_key", fmt.Sprintf("character %d is not allowed: use A-Z, a-z, 0-9 and . _ : -", i+1))
		}
	}
	return nil
}

// sendOnce is the record key of a send: the sender's id and the client's
// key, so one user's key never answers another's send.
func sendOnce(userID, key string) string { return userID + ":" + key }

// fingerprint identifies a message as the client sent it.
func fingerprint(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:16])
}
