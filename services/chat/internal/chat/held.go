package chat

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The review queue: messages a `hold` filter or a mode (first-message
// review, shield mode) keeps from the channel until a moderator approves
// (stored and delivered then, with the sender's text) or denies them.
const (
	// MaxHeldPerChannel bounds a channel's queue: past it a message that
	// would be held is refused (409, reason limit) until moderators
	// review or it expires.
	MaxHeldPerChannel = 200
	// HeldTTL is how long a held message waits for review; then it is
	// dropped as if denied.
	HeldTTL = time.Hour
)

// ModHeld is the moderation log's entry of a message held by a mode
// (first-message review; a hold filter's is filter_hit), with its held id.
const ModHeld ModAction = "held"

// Why a message is held.
const (
	HeldByFilter           = "filter"
	HeldFirstMessage       = "first_message"
	QuotaHeld        Quota = "held messages"
)

// HeldMessage is a message waiting for review. Only its sender (as the
// answer to the send) and the channel's moderators see it.
type HeldMessage struct {
	ID      int64   `json:"id"`
	Channel string  `json:"channel"`
	User    UserRef `json:"user"`
	// Text is what the sender wrote.
	Text string `json:"text"`
	// Reason is filter (FilterID names it) or first_message.
	Reason    string    `json:"reason"`
	FilterID  string    `json:"filter_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// hold puts a message in the review queue; the send's answer carries it.
func (s *Service) hold(ctx context.Context, m Member, text, reason, filterID string, now time.Time, w Watch) (SendResult, error) {
	channel := m.Channel
	if err := s.claimFor(ctx, m, channel, now); err != nil {
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	h := HeldMessage{Channel: channel, User: m.Ref(), Text: text, Reason: reason, FilterID: filterID,
		CreatedAt: now, ExpiresAt: now.Add(HeldTTL)}
	// Every hold is recorded with its held id, in the hold's own step:
	// moderators see it, and webhooks derive held.created from it.
	e := modEntry(channel, ModHeld, AutomodUser, refp(m.Ref()), "held for review: "+reason, now)
	e.Rule = reason
	if reason == HeldByFilter {
		e = modEntry(channel, ModFilterHit, AutomodUser, refp(m.Ref()), "automod: held by filter "+filterID, now)
		e.Rule, e.FilterAction = filterID, ActionHold
	}
	log := &e
	h, err := s.store.HoldMessage(ctx, h, MaxHeldPerChannel, w, log)
	if err != nil {
		return SendResult{}, fmt.Errorf("send: hold message: %w", err)
	}
	return SendResult{Held: &h}, nil
}

// HeldMessages lists a channel's review queue, oldest first (moderators).
func (s *Service) HeldMessages(ctx context.Context, actor User, channel string) ([]HeldMessage, error) {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return nil, err
	}
	if err := s.requireHere(ctx, actor, channel, ActionReviewHeld); err != nil {
		return nil, err
	}
	hs, err := s.store.HeldMessages(ctx, channel, s.clock())
	if err != nil {
		return nil, fmt.Errorf("held messages of %s: %w", channel, err)
	}
	return hs, nil
}

// ApproveHeld stores a held message with its sender's text, delivered
// from now, and takes it off the queue. Two moderators approving at once
// store it once: the append carries an idempotency record named after the
// held id, and the second approval answers with the first's message.
func (s *Service) ApproveHeld(ctx context.Context, actor User, channel string, id int64) (Message, error) {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return Message{}, err
	}
	if err := s.requireHere(ctx, actor, channel, ActionReviewHeld); err != nil {
		return Message{}, err
	}
	now := s.clock()
	h, err := s.store.HeldMessage(ctx, channel, id, now)
	if err != nil {
		return Message{}, fmt.Errorf("approve held %d: %w", id, err)
	}
	once := Once{Key: fmt.Sprintf("held:%d", id), Part: OnceMessage, Fingerprint: fingerprint(h.Text), For: HeldTTL}
	m, err := s.store.AppendSent(ctx, Message{Channel: channel, User: h.User, Text: h.Text, CreatedAt: now}, once, Watch{Chatter: h.User.ID})
	if errors.Is(err, ErrConflict) {
		return Message{}, Conflict("this held message was approved meanwhile")
	}
	if err != nil {
		return Message{}, fmt.Errorf("approve held %d: %w", id, err)
	}
	if err := s.store.DropHeld(ctx, channel, id); err != nil && !errors.Is(err, ErrNotFound) {
		s.log.WarnContext(ctx, "approved message stays in the review queue", "channel", channel, "held_id", id, "err", err)
	}
	e := modEntry(channel, ModHeldApprove, s.actorRef(ctx, actor, channel), refp(h.User), "", now)
	e.HeldID, e.MessageID = id, m.ID
	s.logModeration(ctx, e)
	return m, nil
}

// DenyHeld drops a held message: nobody else ever sees it.
func (s *Service) DenyHeld(ctx context.Context, actor User, channel string, id int64) error {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return err
	}
	if err := s.requireHere(ctx, actor, channel, ActionReviewHeld); err != nil {
		return err
	}
	h, herr := s.store.HeldMessage(ctx, channel, id, s.clock())
	if err := s.store.DropHeld(ctx, channel, id); err != nil {
		return fmt.Errorf("deny held %d: %w", id, err)
	}
	e := modEntry(channel, ModHeldDeny, s.actorRef(ctx, actor, channel), nil, "", s.clock())
	e.HeldID = id
	if herr == nil {
		e.Target = refp(h.User)
	}
	s.logModeration(ctx, e)
	return nil
}
