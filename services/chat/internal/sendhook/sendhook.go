// Package sendhook asks the platform's HTTP endpoint (CHAT_SEND_HOOK_URL)
// about each message before it is stored: a request signed as webhooks
// are (Standard Webhooks), answered allow, deny or replace.
package sendhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/webhooks"
)

// maxAnswer bounds the answer read: a replacement is at most a message.
const maxAnswer = 16 << 10

// maxConns bounds the connections to the hook: sends wait in the pool
// beyond it rather than opening more.
const maxConns = 256

// Client is a chat.SendHook over HTTP.
type Client struct {
	url     string
	key     []byte
	timeout time.Duration
	http    *http.Client
	now     func() time.Time
}

var _ chat.SendHook = (*Client)(nil)

// New returns the client of url, signing with the whsec_ secret; each
// call waits at most timeout. The hook is the operator's own service
// (often on a private network), so no destination is refused.
func New(url, secret string, timeout time.Duration) (*Client, error) {
	key, err := webhooks.SecretKey(secret)
	if err != nil {
		return nil, fmt.Errorf("send hook: %w", err)
	}
	return &Client{url: url, key: key, timeout: timeout, http: webhooks.NewClient(timeout, true, maxConns), now: time.Now}, nil
}

// Answer is the hook's answer body.
type Answer struct {
	// Action is allow, deny or replace.
	Action string `json:"action"`
	// Reason, with deny, is shown to the sender (at most 200 characters).
	Reason string `json:"reason,omitempty"`
	// Text, with replace, is stored instead (and filtered as if sent).
	Text *string `json:"text,omitempty"`
}

// Check implements chat.SendHook.
func (c *Client) Check(ctx context.Context, in chat.SendCheck) (chat.SendVerdict, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body, err := json.Marshal(in)
	if err != nil {
		return chat.SendVerdict{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return chat.SendVerdict{}, err
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	webhooks.SetHeaders(req.Header, c.key, "msg_"+hex.EncodeToString(id), c.now(), body)
	req.Header.Set("User-Agent", "apistack-chat-sendhook/1")
	resp, err := c.http.Do(req)
	if err != nil {
		return chat.SendVerdict{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		return chat.SendVerdict{}, fmt.Errorf("send hook answered %d", resp.StatusCode)
	}
	var a Answer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(&a); err != nil {
		return chat.SendVerdict{}, fmt.Errorf("send hook answer: %w", err)
	}
	switch a.Action {
	case "allow":
		return chat.SendVerdict{}, nil
	case "deny":
		return chat.SendVerdict{Deny: true, Reason: a.Reason}, nil
	case "replace":
		if a.Text == nil {
			return chat.SendVerdict{}, errors.New("send hook answer: replace without text")
		}
		return chat.SendVerdict{Replace: true, Text: *a.Text}, nil
	}
	return chat.SendVerdict{}, fmt.Errorf("send hook answer: action %q (want allow, deny or replace)", a.Action)
}
