package chat

import (
	"context"
	"strings"
	"unicode"
)

// SendHook is the platform's say on a message before it is stored
// (CHAT_SEND_HOOK_URL; internal/sendhook is the HTTP one). Send asks it
// once the sender may send here and the text is well formed, before
// filters: a replacement text is checked and filtered as if sent.
type SendHook interface {
	// Check answers the verdict on in; an error is a hook that did not
	// answer (Options.SendHookFailOpen decides).
	Check(ctx context.Context, in SendCheck) (SendVerdict, error)
}

// SendCheck is what the hook is asked about.
type SendCheck struct {
	User    UserRef `json:"user"`
	Channel string  `json:"channel"`
	Text    string  `json:"text"`
}

// SendVerdict is the hook's answer: Deny (with Reason, shown to the
// sender), or Replace with Text, or neither: allow.
type SendVerdict struct {
	Deny    bool
	Reason  string
	Replace bool
	Text    string
}

// MaxHookReason bounds the reason of a denial shown to the sender.
const MaxHookReason = 200

// ReasonSendHook is Error.Reason of a send the hook refused (403) or could
// not judge (503, CHAT_SEND_HOOK_FAIL=closed).
const ReasonSendHook = "send_hook"

// askSendHook applies the hook's verdict to text: the text to store, or
// the error to answer.
func (s *Service) askSendHook(ctx context.Context, m Member, text string) (string, error) {
	v, err := s.sendHook.Check(ctx, SendCheck{User: m.Ref(), Channel: m.Channel, Text: text})
	if err != nil {
		if s.sendHookFailOpen {
			s.log.WarnContext(ctx, "send hook did not answer; message let through (CHAT_SEND_HOOK_FAIL=open)", "channel", m.Channel, "err", err)
			return text, nil
		}
		s.log.WarnContext(ctx, "send hook did not answer; message refused (CHAT_SEND_HOOK_FAIL=closed)", "channel", m.Channel, "err", err)
		return "", &Error{Kind: KindUnavailable, Reason: ReasonSendHook, Message: "the platform's send check did not answer; nothing was stored, try again"}
	}
	switch {
	case v.Deny:
		msg := "the platform refused this message"
		if r := hookReason(v.Reason); r != "" {
			msg += ": " + r
		}
		return "", &Error{Kind: KindForbidden, Reason: ReasonSendHook, Message: msg}
	case v.Replace:
		t, err := checkMessageText(v.Text)
		if err != nil {
			s.log.WarnContext(ctx, "send hook replaced a message with an invalid text", "channel", m.Channel, "err", err)
			return "", &Error{Kind: KindUnprocessable, Reason: ReasonSendHook, Message: "the platform's replacement for this message is not a valid message"}
		}
		return t, nil
	}
	return text, nil
}

// hookReason keeps a reason printable and short: it comes from another
// service and is shown to the sender.
func hookReason(r string) string {
	r = strings.Map(func(c rune) rune {
		if unicode.IsControl(c) || unicode.Is(unicode.Bidi_Control, c) {
			return -1
		}
		return c
	}, strings.TrimSpace(r))
	if n := []rune(r); len(n) > MaxHookReason {
		r = string(n[:MaxHookReason])
	}
	return r
}
