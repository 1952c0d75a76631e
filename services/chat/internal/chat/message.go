package chat

import (
	"fmt"
	"strings"
	"unicode"
)

// checkMessageText trims a message and refuses it (KindInvalid, field
// "message") when textProblem finds one.
func checkMessageText(text string) (string, error) {
	text = strings.TrimSpace(text)
	if p := textProblem(text); p != "" {
		return "", Invalid("message", p)
	}
	return text, nil
}

// textProblem says what is wrong with a text readers will see (a message,
// a bot response), or "" when nothing is: control characters other than
// newline (NUL, BEL, ESC, DEL, CR, tab, the C1 controls), the
// bidirectional embedding, override and isolate controls (U+202A..U+202E,
// U+2066..U+2069), which make text display in another order than it was
// written, a length outside 1..MaxMessageRunes, and no visible character
// (only spaces, zero-width characters, fillers or marks). Such texts are
// refused, not stripped, so what is stored is exactly what was sent and
// the sender learns why.
func textProblem(text string) string {
	if p := controlProblem(text); p != "" {
		return p
	}
	if n := runeLen(text); n == 0 || n > MaxMessageRunes {
		return fmt.Sprintf("must be 1..%d characters", MaxMessageRunes)
	}
	if !visible(text) {
		return "has no visible character (only spaces, zero-width or other invisible characters)"
	}
	return ""
}

// controlProblem names the first character of text that no reader should
// be sent: a control character other than newline, or a bidirectional
// embedding, override or isolate control; "" when there is none. Every
// text the chat shows to others is held to it (messages, bot responses,
// the reasons of timeouts and bans).
func controlProblem(text string) string {
	pos := 0
	for _, r := range text {
		pos++
		switch {
		case r == '\n':
		case unicode.Is(unicode.Cc, r):
			return fmt.Sprintf("control character %U at character %d is not allowed (only newline is)", r, pos)
		case r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("bidirectional control %U at character %d is not allowed: it changes the order the text displays in", r, pos)
		}
	}
	return ""
}
