package chat

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultChannel is the channel used when a request names none.
const DefaultChannel = "general"

// Message limits.
const (
	MaxMessageRunes = 500
	DefaultLimit    = 50
	MaxLimit        = 200
	// DefaultHistory is how many messages per channel are kept (CHAT_HISTORY).
	DefaultHistory = 1000
)

// NormalizeChannel returns the canonical channel name: "" becomes
// DefaultChannel, letters are folded to lower case, and the result must be
// 1..32 of a-z, 0-9, '-' and '_', starting with a letter or digit. The
// short ASCII alphabet keeps names safe inside Redis keys, URLs and logs.
func NormalizeChannel(name string) (string, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return DefaultChannel, nil
	}
	if len(name) > 32 {
		return "", Invalid("channel", "at most 32 characters")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (i > 0 && (c == '-' || c == '_'))
		if !ok {
			return "", Invalid("channel", "use a-z, 0-9, '-' and '_', starting with a letter or digit")
		}
	}
	return name, nil
}

// UserRef is how a message or event names a user: enough to display it.
type UserRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role Role   `json:"role"`
}

// BotUser authors command replies.
var BotUser = UserRef{ID: "bot", Name: "bot", Role: RoleModerator}

// Message is one chat line. ID increases by one per message in its channel,
// so it doubles as a paging and recovery cursor.
type Message struct {
	ID        int64     `json:"id"`
	Channel   string    `json:"channel"`
	User      UserRef   `json:"user"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
	// Bot marks a command reply.
	Bot bool `json:"bot"`
	// Deleted marks a tombstone: the text is gone, the place stays so that
	// paging and recovery keep their positions.
	Deleted   bool       `json:"deleted,omitempty"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
}

// Tombstone returns m as it looks once deleted at t.
func (m Message) Tombstone(t time.Time) Message {
	m.Deleted = true
	m.Text = ""
	t = t.UTC()
	m.DeletedAt = &t
	return m
}

// Channel holds a channel's settings. Channels exist implicitly: any valid
// name can be read or written, with default settings until changed. The
// modes (modes.go) are what moderators set; ShieldUntil is the automatic
// shield's state, which only the engine's raid watch and SwitchShield write.
type Channel struct {
	Name                 string `json:"name"`
	SlowModeSeconds      int    `json:"slow_mode_seconds"`
	FirstMessageReview   bool   `json:"first_message_review"`
	MinAccountAgeSeconds int    `json:"min_account_age_seconds"`
	UniqueChat           bool   `json:"unique_chat"`
	// Shield is shield mode switched on by a moderator.
	Shield     bool `json:"shield"`
	AutoShield bool `json:"auto_shield"`
	// AutoShieldFirstChatters is the raid watch's threshold: that many
	// first-time chatters within AutoShieldWindow turn the shield on (0:
	// DefaultAutoShieldFirstChatters).
	AutoShieldFirstChatters int `json:"auto_shield_first_chatters"`
	// AutoShieldBlocked is the raid watch's other threshold: that many
	// messages refused by filters within AutoShieldWindow turn the shield
	// on (0: DefaultAutoShieldBlocked).
	AutoShieldBlocked int `json:"auto_shield_blocked"`
	// ShieldQuietSeconds is how long an automatic shield stays on after
	// the last trip (0: DefaultShieldQuietSeconds).
	ShieldQuietSeconds int `json:"shield_quiet_seconds"`
	// ShieldUntil is the end of an automatic shield (nil or past: off;
	// past until its end is announced, Store.EndShield).
	ShieldUntil *time.Time `json:"shield_until,omitempty"`
}

// MaxSlowModeSeconds bounds slow mode (Twitch allows up to 120 s).
const MaxSlowModeSeconds = 120

// User is an account. TokenHash never leaves the service.
type User struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	// TimedOutUntil is set while (and after) a timeout; compare with now.
	TimedOutUntil *time.Time `json:"timed_out_until,omitempty"`
	Banned        bool       `json:"banned"`
	// ModReason is the reason given with the last ban or timeout.
	ModReason string `json:"moderation_reason,omitempty"`
	TokenHash string `json:"-"`
}

// Ref returns the display reference of u.
func (u User) Ref() UserRef { return UserRef{ID: u.ID, Name: u.Name, Role: u.Role} }

// Page selects messages: the latest Limit, or those Before or After an id.
// With both cursors, the messages strictly between them, oldest first.
// After counts when it is above 0 or FromStart is set, so a client asking
// "after=0" gets the oldest page (from the start), not the latest.
type Page struct {
	Limit     int
	Before    int64
	After     int64
	FromStart bool
}

// Cursor is a position in a channel's event log. Seq 0 is the message with
// ID; Seq k > 0 is the k-th non-message event (deletion, timeout, ban) that
// happened after that message and before the next. Message ids therefore
// stay contiguous while every event keeps a place in channel order. It is
// written "12" for a message and "12-3" for an event, like a Redis Stream
// id, followed by ".<epoch>" when it has one: "12-3.9f2c01a4".
//
// Epoch tells one incarnation of a log entry from another at the same
// place. A store that lost the tail of its log (a Redis failover before the
// replica had it) or all of it (a Redis restarted empty) hands the same ids
// out again; a reader whose cursor names the old entry would skip the new
// ones silently. The engine gives every entry an epoch (Redis: from the
// entry's event and its predecessor; memory: the store's incarnation), and
// a reader resuming after a cursor with an epoch is told the history is
// gone (KindHistoryGone: reload) when the entry there has another epoch or
// is missing. 0 is none: such a cursor (a bare message id, or an entry
// written before epochs) is not checked.
type Cursor struct {
	ID    int64
	Seq   int64
	Epoch uint32
}

// Less orders cursors in channel order (the epoch plays no part).
func (c Cursor) Less(o Cursor) bool { return c.ID < o.ID || c.ID == o.ID && c.Seq < o.Seq }

// At reports whether c and o are the same place in the log, whatever
// their epochs.
func (c Cursor) At(o Cursor) bool { return c.ID == o.ID && c.Seq == o.Seq }

// String renders "ID", "ID-Seq", then ".epoch" (hex) when it has one.
func (c Cursor) String() string {
	b := strconv.AppendInt(make([]byte, 0, 32), c.ID, 10)
	if c.Seq != 0 {
		b = append(b, '-')
		b = strconv.AppendInt(b, c.Seq, 10)
	}
	if c.Epoch != 0 {
		b = append(b, '.')
		b = strconv.AppendUint(b, uint64(c.Epoch), 16)
	}
	return string(b)
}

// MarshalText renders the cursor as in String.
func (c Cursor) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses what MarshalText writes.
func (c *Cursor) UnmarshalText(b []byte) error {
	p, err := ParseCursor(string(b))
	if err != nil {
		return err
	}
	*c = p
	return nil
}

// ParseCursor parses "12", "12-3" and either with ".<epoch>" (1..8 hex
// digits); "" is the zero cursor (before everything).
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	bad := Invalid("cursor", fmt.Sprintf("%q is not a cursor: a message id, id-seq, either with .epoch", s))
	pos, epoch, hasEpoch := strings.Cut(s, ".")
	id, seq, hasSeq := strings.Cut(pos, "-")
	var c Cursor
	var err error
	if c.ID, err = strconv.ParseInt(id, 10, 64); err != nil || c.ID < 0 {
		return Cursor{}, bad
	}
	if hasSeq {
		if c.Seq, err = strconv.ParseInt(seq, 10, 64); err != nil || c.Seq < 0 {
			return Cursor{}, bad
		}
	}
	if hasEpoch {
		e, err := ParseEpoch(epoch)
		if err != nil || e == 0 {
			return Cursor{}, bad
		}
		c.Epoch = e
	}
	return c, nil
}

// ParseEpoch reads an epoch as engines store it: 1..8 hex digits; "" is 0.
func ParseEpoch(s string) (uint32, error) {
	if s == "" {
		return 0, nil
	}
	if len(s) > 8 {
		return 0, fmt.Errorf("epoch %q: more than 8 hex digits", s)
	}
	e, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("epoch %q: %w", s, err)
	}
	return uint32(e), nil
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// PageRange returns the inclusive range of message ids [lo, hi] that page p
// covers in a channel whose last id is last and whose messages up to
// trimmed have left the history window. Message ids are contiguous, so a
// page is an id range and engines need no scan to find it; lo > hi means
// an empty page.
func PageRange(p Page, last, trimmed int64) (lo, hi int64) {
	limit := int64(p.Limit)
	if limit <= 0 {
		limit = DefaultLimit
	}
	first := trimmed + 1
	if p.After > 0 || p.FromStart {
		lo = max(p.After+1, first)
		hi = min(last, lo+limit-1)
		if p.Before > 0 {
			hi = min(hi, p.Before-1)
		}
		return lo, hi
	}
	hi = last
	if p.Before > 0 {
		hi = min(hi, p.Before-1)
	}
	lo = max(first, hi-limit+1)
	return lo, hi
}
