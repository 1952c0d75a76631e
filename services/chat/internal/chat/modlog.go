package chat

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The moderation log: every moderation action in a channel, manual or
// automatic, as one entry. Kept for ModLogWindow and at most
// MaxModLogPerChannel entries per channel, both trimmed on every write, so
// a raid that trips filters thousands of times grows a channel's log to
// the count bound and no further.
const (
	ModLogWindow        = 7 * 24 * time.Hour
	MaxModLogPerChannel = 10000
	DefaultModLogLimit  = 50
	MaxModLogLimit      = 200

	// UserMessagesScan is the recent window of a channel that a user's
	// messages are looked for in (and purged from): its last this many
	// messages, or fewer when CHAT_HISTORY keeps fewer.
	UserMessagesScan = 1000
	// MaxUserMessages bounds one answer of UserMessages and one purge.
	MaxUserMessages     = 100
	DefaultUserMessages = 50
)

// ModAction names a moderation log entry.
type ModAction string

// Moderation log actions.
const (
	ModFilterHit   ModAction = "filter_hit"
	ModShieldOn    ModAction = "shield_on"
	ModShieldOff   ModAction = "shield_off"
	ModTimeout     ModAction = "timeout"
	ModBan         ModAction = "ban"
	ModUnban       ModAction = "unban"
	ModDelete      ModAction = "delete_message"
	ModHeldApprove ModAction = "held_approve"
	ModHeldDeny    ModAction = "held_deny"
	ModRoleSet     ModAction = "role_set"
	ModRoleRemove  ModAction = "role_remove"
	ModPurge       ModAction = "purge"
)

// RuleRaidWatch is ModEntry.Rule of the raid watch's automatic shield.
const RuleRaidWatch = "raid_watch"

// ModEntry is one entry of a channel's moderation log.
type ModEntry struct {
	// ID is the entry's place in the log ("<ms>-<n>"), the engine's; it
	// is also the cursor of the page that starts below it.
	ID      string    `json:"id"`
	Channel string    `json:"channel"`
	At      time.Time `json:"at"`
	Action  ModAction `json:"action"`
	// Actor is the moderator, or AutomodUser; Rule then names the filter
	// id or the rule (raid_watch) that acted.
	Actor UserRef `json:"actor"`
	Rule  string  `json:"rule,omitempty"`
	// Target is the user acted on (none for shield switches).
	Target *UserRef `json:"target,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// MessageID is the message deleted or approved (as stored); HeldID
	// the held message approved or denied.
	MessageID int64 `json:"message_id,omitempty"`
	HeldID    int64 `json:"held_id,omitempty"`
	// FilterAction and Penalty say what a filter hit did.
	FilterAction FilterAction `json:"filter_action,omitempty"`
	Penalty      PenaltyKind  `json:"penalty,omitempty"`
	// Until is the end of a timeout or of an automatic shield.
	Until *time.Time `json:"until,omitempty"`
	// Role is the role given (role_set) or taken back (role_remove).
	Role Role `json:"role,omitempty"`
	// Count is how many messages a purge deleted.
	Count int `json:"count,omitempty"`
}

// ModLogPage is one page of a moderation log, newest first; Next is the
// cursor of the following (older) page, empty on the last.
type ModLogPage struct {
	Entries []ModEntry `json:"entries"`
	Next    string     `json:"next,omitempty"`
}

// ModID is a moderation log entry's id: milliseconds and a sequence
// within them, ordered as (MS, N).
type ModID struct {
	MS int64
	N  int64
}

// ParseModID parses "<ms>-<n>".
func ParseModID(s string) (ModID, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok || len(s) > 41 {
		return ModID{}, false
	}
	ms, err1 := strconv.ParseInt(a, 10, 64)
	n, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || ms < 0 || n < 0 {
		return ModID{}, false
	}
	return ModID{ms, n}, true
}

func (id ModID) String() string {
	return strconv.FormatInt(id.MS, 10) + "-" + strconv.FormatInt(id.N, 10)
}

// Less orders ids.
func (id ModID) Less(o ModID) bool { return id.MS < o.MS || id.MS == o.MS && id.N < o.N }

// modEntry is an entry by actor on target at now in channel.
func modEntry(channel string, a ModAction, actor UserRef, target *UserRef, reason string, now time.Time) ModEntry {
	return ModEntry{Channel: channel, At: now, Action: a, Actor: actor, Target: target, Reason: reason}
}

func refp(r UserRef) *UserRef { return &r }

// logModeration records e after an action that could not record it in
// its own step (see the README's table): the action happened, so a
// failure here is logged, not reported.
func (s *Service) logModeration(ctx context.Context, e ModEntry) {
	if err := s.store.AppendModLog(ctx, e); err != nil {
		s.log.WarnContext(ctx, "moderation log entry lost", "channel", e.Channel, "action", e.Action, "err", err)
	}
}

// ModLog returns one page of channel's moderation log, newest first
// (moderators there). limit 0 is DefaultModLogLimit; before is a page's
// Next ("" for the newest).
func (s *Service) ModLog(ctx context.Context, actor User, channel string, limit int, before string) (ModLogPage, error) {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return ModLogPage{}, err
	}
	if err := s.requireHere(ctx, actor, channel, ActionReadModLog); err != nil {
		return ModLogPage{}, err
	}
	var v validation
	if limit == 0 {
		limit = DefaultModLogLimit
	}
	if limit < 1 || limit > MaxModLogLimit {
		v.add("limit", "must be 1..%d", MaxModLogLimit)
	}
	var from *ModID
	if before != "" {
		id, ok := ParseModID(before)
		if !ok {
			v.add("before", "must be a moderation log cursor (a page's next)")
		}
		from = &id
	}
	if err := v.err(); err != nil {
		return ModLogPage{}, err
	}
	es, err := s.store.ModLog(ctx, channel, from, limit+1, s.clock())
	if err != nil {
		return ModLogPage{}, fmt.Errorf("moderation log of %s: %w", channel, err)
	}
	page := ModLogPage{Entries: es}
	if len(es) > limit {
		page.Entries = es[:limit]
		page.Next = es[limit-1].ID
	}
	return page, nil
}

// userMessages returns up to limit of id's messages (not deleted) among
// the channel's last UserMessagesScan, newest first.
func (s *Service) userMessages(ctx context.Context, channel, id string, limit int) ([]Message, error) {
	var out []Message
	before := int64(0)
	for scanned := 0; scanned < UserMessagesScan && len(out) < limit; {
		ms, err := s.store.Messages(ctx, channel, Page{Limit: min(MaxLimit, UserMessagesScan-scanned), Before: before})
		if err != nil {
			return nil, err
		}
		for i := len(ms) - 1; i >= 0 && len(out) < limit; i-- {
			if m := ms[i]; !m.Deleted && !m.Bot && m.User.ID == id {
				out = append(out, m)
			}
		}
		if len(ms) == 0 || ms[0].ID <= 1 {
			break
		}
		scanned += len(ms)
		before = ms[0].ID
	}
	if out == nil {
		out = []Message{}
	}
	return out, nil
}

// UserMessages returns a user's recent messages in channel, newest first
// (moderators there): up to limit (default DefaultUserMessages, at most
// MaxUserMessages) among the channel's last UserMessagesScan messages.
func (s *Service) UserMessages(ctx context.Context, actor User, channel, id string, limit int) ([]Message, error) {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return nil, err
	}
	if err := s.requireHere(ctx, actor, channel, ActionReadModLog); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = DefaultUserMessages
	}
	if limit < 1 || limit > MaxUserMessages {
		return nil, Invalid("limit", fmt.Sprintf("must be 1..%d", MaxUserMessages))
	}
	ms, err := s.userMessages(ctx, channel, id, limit)
	if err != nil {
		return nil, fmt.Errorf("messages of %s in %s: %w", id, channel, err)
	}
	return ms, nil
}

// PurgeInput is the optional body of a purge.
type PurgeInput struct {
	Reason string `json:"reason,omitempty"`
}

// PurgeResult says what a purge did.
type PurgeResult struct {
	Deleted int `json:"deleted"`
}

// Purge deletes a user's recent messages in channel (moderators there, on
// lower roles): up to MaxUserMessages among the channel's last
// UserMessagesScan, each replaced by its tombstone with a message_deleted
// event as DELETE /messages/{id} does, and writes one moderation log
// entry with the count.
func (s *Service) Purge(ctx context.Context, actor User, channel, id string, in PurgeInput) (PurgeResult, error) {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return PurgeResult{}, err
	}
	am, err := s.allowedHere(ctx, actor, channel, ActionPurgeMessages)
	if err != nil {
		return PurgeResult{}, err
	}
	if err := validateReason(in.Reason); err != nil {
		return PurgeResult{}, err
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return PurgeResult{}, err
	}
	tm, err := s.Member(ctx, t, channel)
	if err != nil {
		return PurgeResult{}, err
	}
	if err := s.requireOnIn(am, ActionPurgeMessages, tm); err != nil {
		return PurgeResult{}, err
	}
	ms, err := s.userMessages(ctx, channel, id, MaxUserMessages)
	if err != nil {
		return PurgeResult{}, fmt.Errorf("purge %s in %s: %w", id, channel, err)
	}
	now := s.clock()
	n := 0
	for _, m := range ms {
		if _, err := s.store.DeleteMessage(ctx, channel, m.ID, now, nil); err != nil {
			if KindOf(err) == KindNotFound {
				continue // trimmed meanwhile
			}
			if n > 0 {
				s.purged(ctx, am, tm, channel, in.Reason, n, now)
			}
			return PurgeResult{}, fmt.Errorf("purge %s in %s: %w", id, channel, err)
		}
		n++
	}
	s.purged(ctx, am, tm, channel, in.Reason, n, now)
	return PurgeResult{Deleted: n}, nil
}

// purged records a purge of n messages, also one cut short by an error.
func (s *Service) purged(ctx context.Context, am, tm Member, channel, reason string, n int, now time.Time) {
	e := modEntry(channel, ModPurge, am.Ref(), refp(tm.Ref()), strings.TrimSpace(reason), now)
	e.Count = n
	s.logModeration(ctx, e)
}
