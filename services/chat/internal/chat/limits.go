package chat

import (
	"fmt"
	"sync"
)

// Limits bound what can be created, so that no moderator (or sender, for
// channels) can make every send slower or the store grow without end.
// Zero fields take the defaults; the process reads them from
// CHAT_MAX_FILTERS, CHAT_MAX_REGEX_FILTERS, CHAT_MAX_COMMANDS,
// CHAT_MAX_CHANNELS and CHAT_MAX_CHANNEL_ROLES. Every replica on one Redis
// shares them, and the engines check a count and add in one atomic step.
// Filters, regex filters and commands count per scope: the platform-wide
// ones up to the limit, and each channel's own up to the limit again;
// roles count per channel; channels per deployment.
type Limits struct {
	Filters      int
	RegexFilters int
	Commands     int
	Channels     int
	// ChannelRoles bounds the roles given in one channel.
	ChannelRoles int
}

// Default limits. Regular expressions are the one filter kind whose cost
// grows with the message for each filter (see BenchmarkApplyFilters), so
// they have their own, lower limit.
const (
	DefaultMaxFilters      = 300
	DefaultMaxRegexFilters = 10
	DefaultMaxCommands     = 500
	DefaultMaxChannels     = 1000
	DefaultMaxChannelRoles = 1000
)

// WithDefaults fills zero fields.
func (l Limits) WithDefaults() Limits {
	if l.Filters <= 0 {
		l.Filters = DefaultMaxFilters
	}
	if l.RegexFilters <= 0 {
		l.RegexFilters = DefaultMaxRegexFilters
	}
	if l.Commands <= 0 {
		l.Commands = DefaultMaxCommands
	}
	if l.Channels <= 0 {
		l.Channels = DefaultMaxChannels
	}
	if l.ChannelRoles <= 0 {
		l.ChannelRoles = DefaultMaxChannelRoles
	}
	return l
}

// Quota names a limit.
type Quota string

// Quotas.
const (
	QuotaFilters      Quota = "filters"
	QuotaRegexFilters Quota = "regex filters"
	QuotaCommands     Quota = "commands"
	QuotaChannels     Quota = "channels"
	QuotaOpenChannels Quota = "open channels"
	QuotaChannelRoles Quota = "roles in a channel"
)

// ReasonLimit is the Reason of a LimitReached error.
const ReasonLimit = "limit"

var quotaText = map[Quota]struct{ variable, then string }{
	QuotaFilters:      {"CHAT_MAX_FILTERS", "delete a filter first"},
	QuotaRegexFilters: {"CHAT_MAX_REGEX_FILTERS", "delete a regex filter first, or use a blocked_term"},
	QuotaCommands:     {"CHAT_MAX_COMMANDS", "delete a command first"},
	QuotaChannels:     {"CHAT_MAX_CHANNELS", "use an existing channel"},
	QuotaOpenChannels: {"CHAT_MAX_CHANNELS, for channels viewers opened", "use an existing channel, or wait for an idle one to be reclaimed"},
	QuotaChannelRoles: {"CHAT_MAX_CHANNEL_ROLES", "take a role back first"},
	QuotaHeld:         {"per channel, fixed", "wait for a moderator to review the queue"},
}

// LimitReached is what engines return when creating one more would pass
// max: a conflict (HTTP 409) whose message names the limit.
func LimitReached(q Quota, max int) error {
	t := quotaText[q]
	return &Error{Kind: KindConflict, Reason: ReasonLimit, Limit: max,
		Message: fmt.Sprintf("limit reached: this chat allows at most %d %s (%s); %s", max, q, t.variable, t.then)}
}

// claimedChannels remembers the channels this process has claimed: a claim
// is never taken back (channels are not deleted), so a second claim of the
// same name would only cost a round trip to the store. It holds at most
// the channel limit's worth of names.
type claimedChannels struct {
	mu    sync.Mutex
	names map[string]struct{}
}

func (c *claimedChannels) has(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.names[name]
	return ok
}

func (c *claimedChannels) add(name string, max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names == nil {
		c.names = map[string]struct{}{}
	}
	if len(c.names) < max {
		c.names[name] = struct{}{}
	}
}
