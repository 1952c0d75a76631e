package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SendInput is a message to send.
type SendInput struct {
	Channel string `json:"channel,omitempty"`
	Message string `json:"message"`
	// IdempotencyKey, when set, makes the send happen once: sent again with
	// the same key (by the same user, in the same channel, within
	// IdempotencyWindow) it answers with the first send's result.
	IdempotencyKey string `json:"-"`
}

// SendResult is the stored message and, when it triggered a command, the
// bot's stored reply.
type SendResult struct {
	Message Message  `json:"message"`
	Reply   *Message `json:"reply,omitempty"`
	// Replayed says the result is an earlier send's, found by its
	// idempotency key: this call stored nothing.
	Replayed bool `json:"-"`
	// Held, when set, is the message held for review: nothing was stored
	// and Message is empty.
	Held *HeldMessage `json:"held,omitempty"`
}

// Send runs every rule on a message and stores it: the send limit,
// permission, ban and timeout, length, filters, slow mode, then storage,
// then commands. A Held sender is read again first (see Sender). Errors:
// Unauthorized (the user no longer exists), Forbidden (with Until for a
// timeout), Invalid, Blocked (Reason = filter kind), SlowMode (RetryAfter;
// Reason slow_mode, or send_limit for the per-user limit),
// Unavailable. A nil error means the message is stored.
//
// Round trips: everything Send reads before it writes (the held user, the
// filters, the channel's settings, the send-limit count, the command of a
// "!" message) is asked at once (Store.ReadForSend), then the message is
// appended, with the slow-mode gate in the same step; a command adds its
// cooldown, count and reply. On a replica busy delivering, each sequential
// round trip waits for the goroutine to be scheduled again, so fewer of
// them make a send return sooner (issue 12).
func (s *Service) Send(ctx context.Context, from Sender, in SendInput) (SendResult, error) {
	channel, err := NormalizeChannel(in.Channel)
	if err != nil {
		return SendResult{}, err
	}
	u := from.user
	if u.ID == "" {
		return SendResult{}, &Error{Kind: KindUnauthorized, Message: "sending needs a user"}
	}
	var once Once
	if in.IdempotencyKey != "" {
		if err := validIdempotencyKey(in.IdempotencyKey); err != nil {
			return SendResult{}, err
		}
		once = Once{Key: sendOnce(u.ID, in.IdempotencyKey), Part: OnceMessage, Fingerprint: fingerprint(in.Message), For: IdempotencyWindow}
	}
	now := s.clock()
	// The sender's standing in the channel (a role given there, a ban or
	// timeout held there) and the channel's own filters are read with the
	// rest: the send still makes one round trip before it writes.
	reads := SendReads{Now: now, Once: OnceRef{Channel: channel, Key: once.Key}, In: channel, Member: u.ID}
	if !from.current() {
		reads.User = u.ID
	}
	// The send limit counts every attempt, first: it bounds the work one
	// user can cause (filters run on every message), and a flood of refused
	// messages is still a flood. A held record decides whether to count:
	// the broadcaster's role never changes (checkSendLimit judges by the
	// current one).
	if s.countsSends(u) {
		reads.CountUser, reads.Limit = u.ID, s.sendLimit
	}
	// A held sender's role may have changed: read the settings whatever it
	// was. The modes need them, whether the sender has chatted here, and
	// unique chat's gate for this text: all in the same round trip. A role
	// given in the channel is not known yet: the platform-wide one decides
	// (a channel's VIP has them read for nothing).
	if !from.current() || !Allowed(u.Role, ActionBypassSlowMode) || !Allowed(u.Role, ActionBypassChatModes) {
		reads.Channel, reads.Chatter = channel, u.ID
		reads.Unique = uniqueGate(channel, u.ID, in.Message)
	}
	// A message that looks like a command has its command read now too;
	// runCommand uses it if filters left the trigger as it was.
	if inv, ok := parseInvocation(in.Message); ok {
		reads.Trigger = inv.trigger
	}
	st := s.store.ReadForSend(ctx, reads)
	// A send seen before answers as it did, whatever has changed since
	// (a ban, a filter, slow mode): it stores nothing now. Its count
	// against the send limit, made in the same round trip, stays.
	if once.Set() {
		if st.OnceErr != nil {
			return SendResult{}, fmt.Errorf("send: read idempotency record: %w", st.OnceErr)
		}
		if st.Once.Found() {
			return replay(st.Once, once)
		}
	}
	if !from.current() {
		if errors.Is(st.UserErr, ErrNotFound) {
			return SendResult{}, &Error{Kind: KindUnauthorized, Message: "user no longer exists"}
		}
		if st.UserErr != nil {
			return SendResult{}, fmt.Errorf("send: load sender: %w", st.UserErr)
		}
		u = st.User
	}
	if err := s.checkSendLimit(ctx, u, st.SendWait, st.CountErr); err != nil {
		return SendResult{}, err
	}
	if st.StandingErr != nil {
		return SendResult{}, fmt.Errorf("send: standing in %s: %w", channel, st.StandingErr)
	}
	member := Member{User: u, Channel: channel, Standing: st.Standing}
	role := member.Role()
	if err := s.requireIn(member, ActionSendMessages); err != nil {
		return SendResult{}, err
	}
	if err := s.checkModeration(member, now); err != nil {
		return SendResult{}, err
	}
	text, err := checkMessageText(in.Message)
	if err != nil {
		return SendResult{}, err
	}
	if err := errors.Join(st.FiltersErr, st.ChannelFiltersErr); err != nil {
		return SendResult{}, fmt.Errorf("send: load filters: %w", err)
	}
	var modes Modes
	checkModes := !Allowed(role, ActionBypassChatModes)
	if checkModes || !Allowed(role, ActionBypassSlowMode) {
		if st.ChannelErr != nil {
			return SendResult{}, fmt.Errorf("send: channel settings: %w", st.ChannelErr)
		}
		modes = st.Channel.Modes(now)
	}
	if checkModes {
		if err := checkAccountAge(u, modes, now); err != nil {
			return SendResult{}, err
		}
		if st.ChatterErr != nil {
			return SendResult{}, fmt.Errorf("send: read chatter: %w", st.ChatterErr)
		}
	}
	// A first-time chatter (never sent here) is what the raid watch
	// counts, on the step that stores or holds the message.
	watch := Watch{Chatter: u.ID}
	if checkModes && !st.Chatter {
		watch.Raid = raidFor(st.Channel, channel, now)
	}
	// An automatic shield whose quiet period is over but whose end no
	// replica announced yet (none has readers of the channel) is ended
	// by the first send that sees it: one more round trip, once.
	if checkModes && st.Channel.ShieldUntil != nil && !st.Channel.ShieldUntil.After(now) {
		if _, err := s.EndAutoShield(ctx, channel); err != nil {
			s.log.WarnContext(ctx, "raid watch: end an automatic shield", "channel", channel, "err", err)
		}
	}
	// The platform's say comes last before filters, once everything that
	// costs no round trip has passed: a refused sender never reaches it,
	// and a replacement is filtered as if it had been sent.
	if s.sendHook != nil {
		if text, err = s.askSendHook(ctx, member, text); err != nil {
			return SendResult{}, err
		}
	}
	out := applyFilters(text, role, s.compiledFilters(ctx, st.Filters, st.ChannelFilters))
	if f := out.blocked; f != nil {
		if f.Action == ActionHold {
			return s.hold(ctx, member, text, HeldByFilter, f.ID, now, watch)
		}
		err := s.refuse(ctx, member, f, now)
		if checkModes && KindOf(err) == KindBlocked {
			// Refusals are the raid watch's other count: spam that
			// filters catch is a raid as much as fresh accounts are.
			s.countBlocked(ctx, member, st.Channel, now)
		}
		return SendResult{}, err
	}
	if checkModes && modes.UniqueChat {
		if st.UniqueErr != nil {
			return SendResult{}, fmt.Errorf("send: unique chat: %w", st.UniqueErr)
		}
		if st.UniqueWait > 0 {
			return SendResult{}, uniqueRefused(st.UniqueWait)
		}
	}
	if checkModes && modes.FirstMessageReview && !st.Chatter {
		return s.hold(ctx, member, text, HeldFirstMessage, "", now, watch)
	}
	if err := s.claimFor(ctx, member, channel, now); err != nil {
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	// Slow mode and unique chat are gates passed in the same step as the
	// append: a message refused by one stores nothing, and one stored has
	// closed them.
	var gates []Gate
	slow := !Allowed(role, ActionBypassSlowMode) && modes.SlowModeSeconds > 0
	if slow {
		gates = append(gates, Gate{Channel: channel, Key: "slow:" + u.ID, For: time.Duration(modes.SlowModeSeconds) * time.Second})
	}
	if checkModes && modes.UniqueChat {
		gates = append(gates, reads.Unique)
	}
	// A sender the reads found a chatter here already (the seen set only
	// grows) is not added again: the append then writes nothing for it.
	if reads.Chatter != "" && st.ChatterErr == nil && st.Chatter {
		watch.Chatter = ""
	}
	m, err := s.store.AppendSent(ctx, Message{Channel: channel, User: member.Ref(), Text: out.text, CreatedAt: now}, once, watch, gates...)
	var closed *Error
	if errors.As(err, &closed) && closed.Kind == KindSlowMode {
		if !slow {
			return SendResult{}, uniqueRefused(closed.RetryAfter)
		}
		return SendResult{}, &Error{Kind: KindSlowMode, RetryAfter: closed.RetryAfter, Reason: "slow_mode",
			Message: fmt.Sprintf("slow mode is on: wait %s", roundUpSecond(closed.RetryAfter))}
	}
	if err != nil {
		return SendResult{}, fmt.Errorf("send: store message: %w", err)
	}
	res := SendResult{Message: m}
	if once.Set() {
		once.Part, once.Fingerprint = OnceReply, ""
	}
	reply, err := s.runCommand(ctx, member, m, now, once, prefetched{trigger: reads.Trigger, cmd: st.Command, err: st.CommandErr})
	if err != nil {
		// The message is stored and must be reported as such; a lost bot
		// reply is not worth failing the request over.
		s.log.WarnContext(ctx, "bot reply failed", "channel", channel, "message_id", m.ID, "err", err)
	}
	res.Reply = reply
	return res, nil
}

// uniqueGate is unique chat's gate for a sender and a text: closed for
// UniqueChatWindow once the text is stored. The text is compared as
// filters see it (uniqueForm): case, look-alike letters, fullwidth forms,
// invisible characters and runs of spaces do not make a text new.
func uniqueGate(channel, user, text string) Gate {
	return Gate{Channel: channel, Key: "uniq:" + user + ":" + fingerprint(uniqueForm(text)), For: UniqueChatWindow}
}

// uniqueForm is text under the filters' folding (NFKC-like width and
// compatibility folding, TR39 skeleton, zero-width characters dropped),
// with every run of spaces one space and none at either end.
func uniqueForm(text string) string {
	nt := normalize(text)
	sk := nt.skeleton().runes
	var b strings.Builder
	b.Grow(len(sk))
	space := false
	for _, r := range sk {
		if r == ' ' {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

func uniqueRefused(wait time.Duration) error {
	return &Error{Kind: KindSlowMode, RetryAfter: wait, Reason: "unique_chat",
		Message: fmt.Sprintf("unique chat is on: you sent this message less than %s ago", UniqueChatWindow)}
}

// checkAccountAge refuses an account younger than the channel's minimum
// (users are created, or provisioned on first sight, at CreatedAt),
// saying when it may send.
func checkAccountAge(u User, m Modes, now time.Time) error {
	if m.MinAccountAgeSeconds <= 0 {
		return nil
	}
	from := u.CreatedAt.Add(time.Duration(m.MinAccountAgeSeconds) * time.Second)
	if !from.After(now) {
		return nil
	}
	return &Error{Kind: KindForbidden, Reason: "account_too_new", Until: from,
		Message: fmt.Sprintf("this channel needs accounts older than %s to send: you may send from %s",
			time.Duration(m.MinAccountAgeSeconds)*time.Second, from.UTC().Format(time.RFC3339))}
}

// replay answers a send whose idempotency key found rec: the first send's
// result, if the message is the same.
func replay(rec OnceRecord, once Once) (SendResult, error) {
	if rec.Fingerprint != once.Fingerprint {
		return SendResult{}, &Error{Kind: KindUnprocessable, Reason: ReasonKeyReused,
			Message: "this Idempotency-Key was used with another message; use a new key for a new message"}
	}
	return SendResult{Message: *rec.Message, Reply: rec.Reply, Replayed: true}, nil
}

func roundUpSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// prefetched is a command read with a send's other reads (ReadForSend),
// for the trigger the message had before filters.
type prefetched struct {
	trigger string
	cmd     Command
	err     error
}

// runCommand answers a command invocation with a stored bot message, or
// returns nil when the message is no invocation, the command is unknown,
// disabled, above the sender's level or cooling down (bots stay silent then,
// as Nightbot does, instead of spamming "on cooldown"); a reply that breaks
// the text rules is an error, not stored (Command.reply). The invocation is
// read from the stored text; pre is used when its trigger is that one (a
// mask may have changed it), else the command is read now. once records
// the reply with the message's idempotency record, if it has one.
func (s *Service) runCommand(ctx context.Context, member Member, m Message, now time.Time, once Once, pre prefetched) (*Message, error) {
	u, role := member.User, member.Role()
	inv, ok := parseInvocation(m.Text)
	if !ok {
		return nil, nil
	}
	cmd, err := pre.cmd, pre.err
	if inv.trigger != pre.trigger {
		cmd, err = s.resolveCommand(ctx, m.Channel, inv.trigger)
	}
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", inv.trigger, err)
	}
	if !cmd.Enabled || !role.AtLeast(cmd.UserLevel) {
		return nil, nil
	}
	if !Allowed(role, ActionBypassCooldowns) {
		// A channel's own command has gates of its own, apart from those
		// of a platform-wide command of the same name.
		key := "cmd"
		if cmd.Channel != "" {
			key = "ccmd"
		}
		var gates []Gate
		if cmd.CooldownSeconds > 0 {
			gates = append(gates, Gate{Channel: m.Channel, Key: key + ":" + cmd.Name, For: time.Duration(cmd.CooldownSeconds) * time.Second})
		}
		if cmd.UserCooldownSeconds > 0 {
			gates = append(gates, Gate{Channel: m.Channel, Key: key + "u:" + cmd.Name + ":" + u.ID, For: time.Duration(cmd.UserCooldownSeconds) * time.Second})
		}
		if len(gates) > 0 {
			wait, err := s.store.Acquire(ctx, now, gates...)
			if err != nil {
				return nil, fmt.Errorf("command %s cooldown: %w", cmd.Name, err)
			}
			if wait > 0 {
				return nil, nil
			}
		}
	}
	count, err := s.store.CountCommand(ctx, cmd.Channel, cmd.Name)
	if err != nil {
		return nil, fmt.Errorf("command %s count: %w", cmd.Name, err)
	}
	text, err := cmd.reply(RenderVars{User: u.Name, Args: inv.args, Count: count, Channel: m.Channel})
	if err != nil {
		return nil, err
	}
	reply, err := s.store.AppendMessage(ctx, Message{Channel: m.Channel, User: BotUser, Text: text, CreatedAt: now, Bot: true}, once)
	if err != nil {
		return nil, fmt.Errorf("command %s reply: %w", cmd.Name, err)
	}
	return &reply, nil
}

// Messages returns a page of a channel, oldest first. Limit 0 means
// DefaultLimit; Before and After are message ids (exclusive). actor nil is
// an anonymous reader.
func (s *Service) Messages(ctx context.Context, actor *User, channel string, p Page) ([]Message, error) {
	if err := s.canRead(actor); err != nil {
		return nil, err
	}
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return nil, err
	}
	var v validation
	if p.Limit == 0 {
		p.Limit = DefaultLimit
	}
	if p.Limit < 1 || p.Limit > MaxLimit {
		v.add("limit", "must be 1..%d", MaxLimit)
	}
	if p.Before < 0 {
		v.add("before", "must be a message id")
	}
	if p.After < 0 {
		v.add("after", "must be a message id")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	ms, err := s.store.Messages(ctx, channel, p)
	if err != nil {
		return nil, fmt.Errorf("list messages: %w", err)
	}
	return ms, nil
}

// DeleteMessage replaces a message with its tombstone. Moderators delete
// messages of lower roles, their own and bot replies; nobody deletes the
// broadcaster's, and a moderator cannot delete another moderator's.
func (s *Service) DeleteMessage(ctx context.Context, actor User, channel string, id int64) (Message, error) {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return Message{}, err
	}
	am, err := s.allowedHere(ctx, actor, channel, ActionDeleteMessages)
	if err != nil {
		return Message{}, err
	}
	m, err := s.store.Message(ctx, channel, id)
	if err != nil {
		return Message{}, fmt.Errorf("delete message %d: %w", id, err)
	}
	if !m.Bot && m.User.ID != actor.ID {
		author := User{ID: m.User.ID, Role: m.User.Role}
		if cur, err := s.store.User(ctx, m.User.ID); err == nil {
			author = cur // judge by today's role: a demoted moderator's lines can go
		} else if !errors.Is(err, ErrNotFound) {
			return Message{}, fmt.Errorf("delete message %d: load author: %w", id, err)
		}
		// Judged by the roles held in this channel, as everything here.
		tm, err := s.Member(ctx, author, channel)
		if err != nil {
			return Message{}, fmt.Errorf("delete message %d: %w", id, err)
		}
		if err := s.requireOnIn(am, ActionDeleteMessages, tm); err != nil {
			return Message{}, err
		}
	}
	// Deleting one's own message is not moderation: no log entry.
	now := s.clock()
	var log *ModEntry
	if m.User.ID != actor.ID || m.Bot {
		e := modEntry(channel, ModDelete, am.Ref(), refp(m.User), "", now)
		e.MessageID = id
		log = &e
	}
	t, err := s.store.DeleteMessage(ctx, channel, id, now, log)
	if err != nil {
		return Message{}, fmt.Errorf("delete message %d: %w", id, err)
	}
	return t, nil
}
