package chat

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Command limits.
const (
	DefaultCooldownSeconds = 5
	MaxCooldownSeconds     = 86400
	MaxAliases             = 10
	maxTriggerRunes        = 32
)

// Command is a bot command: a message starting with its name or one of its
// aliases makes the bot answer with Response, variables filled.
type Command struct {
	Name string `json:"command"`
	// Channel is the channel whose command this is; "" is platform-wide.
	Channel  string   `json:"channel,omitempty"`
	Response string   `json:"response"`
	Aliases  []string `json:"aliases"`
	Enabled  bool     `json:"enabled"`
	// CooldownSeconds is the wait between two uses in a channel, by anyone.
	CooldownSeconds int `json:"cooldown_seconds"`
	// UserCooldownSeconds is the wait between two uses by the same user.
	UserCooldownSeconds int `json:"user_cooldown_seconds"`
	// UserLevel is the lowest role that may trigger the command.
	UserLevel Role      `json:"user_level"`
	Count     int64     `json:"count"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Triggers returns the name and the aliases.
func (c Command) Triggers() []string { return append([]string{c.Name}, c.Aliases...) }

// NormalizeTrigger turns "hello", "!Hello" and " !HELLO " into "!hello".
// Triggers are one word of letters, digits, '_' or '-', at most 32 long.
func NormalizeTrigger(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "!")
	if s == "" {
		return "", Invalid("command", "must not be empty")
	}
	if runeLen(s) > maxTriggerRunes {
		return "", Invalid("command", "at most 32 characters")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", Invalid("command", "use letters a-z, digits, '_' or '-' (an optional leading '!')")
		}
	}
	return "!" + s, nil
}

// CommandInput creates a command. Nil optional fields take their defaults.
type CommandInput struct {
	Command string `json:"command"`
	// Channel makes it that channel's own command; "" platform-wide.
	Channel             string   `json:"channel,omitempty"`
	Response            string   `json:"response"`
	Aliases             []string `json:"aliases,omitempty"`
	Enabled             *bool    `json:"enabled,omitempty"`
	CooldownSeconds     *int     `json:"cooldown_seconds,omitempty"`
	UserCooldownSeconds *int     `json:"user_cooldown_seconds,omitempty"`
	UserLevel           Role     `json:"user_level,omitempty"`
}

// CommandPatch changes a command; nil fields stay as they are.
type CommandPatch struct {
	Response            *string   `json:"response,omitempty"`
	Aliases             *[]string `json:"aliases,omitempty"`
	Enabled             *bool     `json:"enabled,omitempty"`
	CooldownSeconds     *int      `json:"cooldown_seconds,omitempty"`
	UserCooldownSeconds *int      `json:"user_cooldown_seconds,omitempty"`
	UserLevel           *Role     `json:"user_level,omitempty"`
}

// validate checks c (already normalised) and reports every problem at once.
func (c *Command) validate() error {
	var v validation
	if p := textProblem(strings.TrimSpace(c.Response)); p != "" {
		v.add("response", "%s", p)
	} else if p := textProblem(strings.TrimSpace(RenderResponse(c.Response, plainUse))); p != "" {
		// "${args}" alone, or invisible text around it: the reply to a
		// plain "!trigger" would be refused (see reply).
		v.add("response", "used without arguments, its reply would not pass as a message: %s", p)
	}
	if c.CooldownSeconds < 0 || c.CooldownSeconds > MaxCooldownSeconds {
		v.add("cooldown_seconds", "must be 0..%d", MaxCooldownSeconds)
	}
	if c.UserCooldownSeconds < 0 || c.UserCooldownSeconds > MaxCooldownSeconds {
		v.add("user_cooldown_seconds", "must be 0..%d", MaxCooldownSeconds)
	}
	if !c.UserLevel.Valid() {
		v.add("user_level", "must be one of broadcaster, moderator, vip, subscriber, viewer")
	}
	if len(c.Aliases) > MaxAliases {
		v.add("aliases", "at most %d", MaxAliases)
	}
	seen := map[string]bool{c.Name: true}
	out := c.Aliases[:0:0]
	for _, a := range c.Aliases {
		n, err := NormalizeTrigger(a)
		if err != nil {
			v.add("aliases", "%q: use letters a-z, digits, '_' or '-' (at most 32)", a)
			continue
		}
		if seen[n] {
			continue // a repeated alias or the name itself is harmless; drop it
		}
		seen[n] = true
		out = append(out, n)
	}
	c.Aliases = out
	return v.err()
}

// invocation is a parsed command call.
type invocation struct {
	trigger string
	args    []string
}

// parseInvocation recognises "!trigger args..." at the start of a message.
func parseInvocation(text string) (invocation, bool) {
	fields := strings.Fields(text)
	if len(fields) == 0 || !strings.HasPrefix(fields[0], "!") {
		return invocation{}, false
	}
	t, err := NormalizeTrigger(fields[0])
	if err != nil {
		return invocation{}, false
	}
	return invocation{trigger: t, args: fields[1:]}, true
}

// RenderVars are the values of a response's variables.
type RenderVars struct {
	User    string
	Args    []string
	Count   int64
	Channel string
}

// plainUse is an invocation without arguments, which any command gets: a
// response whose reply to it breaks the text rules is refused up front.
var plainUse = RenderVars{User: "user", Count: 1, Channel: "general"}

// reply renders c's response for one invocation and holds it to the rules
// a user's message meets (checkMessageText): the template passed them, but
// the arguments it echoes can still make it invisible (a "${touser}" given
// zero-width spaces). Such a reply is not stored.
func (c Command) reply(v RenderVars) (string, error) {
	text, err := checkMessageText(RenderResponse(c.Response, v))
	if err != nil {
		return "", fmt.Errorf("command %s: its reply is not stored: %w", c.Name, err)
	}
	return text, nil
}

// RenderResponse fills ${user}, ${touser} (first argument without a leading
// '@', else the sender), ${args}, ${count} and ${channel}. Unknown variables
// stay as written so a typo is visible in chat, not silently erased.
func RenderResponse(tmpl string, v RenderVars) string {
	touser := v.User
	if len(v.Args) > 0 {
		if t := strings.TrimPrefix(v.Args[0], "@"); t != "" {
			touser = t
		}
	}
	r := strings.NewReplacer(
		"${user}", v.User,
		"${touser}", touser,
		"${args}", strings.Join(v.Args, " "),
		"${count}", strconv.FormatInt(v.Count, 10),
		"${channel}", v.Channel,
	)
	out := r.Replace(tmpl)
	if runeLen(out) > MaxMessageRunes {
		out = string([]rune(out)[:MaxMessageRunes])
	}
	return out
}
