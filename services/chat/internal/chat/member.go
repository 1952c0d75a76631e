package chat

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Standing is a user's place in one channel: the role given there, and a
// ban or timeout that holds there only. The zero Standing is none: a
// viewer in good standing.
type Standing struct {
	// Role is the role given in the channel ("" when none).
	Role          Role       `json:"role,omitempty"`
	TimedOutUntil *time.Time `json:"timed_out_until,omitempty"`
	Banned        bool       `json:"banned,omitempty"`
	ModReason     string     `json:"moderation_reason,omitempty"`
}

// moderated reports whether st holds a ban or a timeout (current or past).
func (st Standing) moderated() bool {
	return st.Banned || st.TimedOutUntil != nil || st.ModReason != ""
}

// Member is a user as seen inside one channel: the platform-wide record
// and the standing in that channel. A Member without a channel is the user
// platform-wide.
type Member struct {
	User     User
	Channel  string
	Standing Standing
}

// Role is the member's role in its channel: the higher of the platform-wide
// role and the role given in the channel. Every check made inside a
// channel asks this, so a role given in one channel means nothing in
// another, and a platform-wide role holds in all of them.
func (m Member) Role() Role {
	if m.Standing.Role.Above(m.User.Role) {
		return m.Standing.Role
	}
	return m.User.Role
}

// Ref is the member as a message or event shows it: with its role there.
func (m Member) Ref() UserRef {
	r := m.User.Ref()
	r.Role = m.Role()
	return r
}

// Member returns u as seen in channel (normalised); channel "" is the user
// platform-wide. This is the one place that answers "what role does this
// user have here".
func (s *Service) Member(ctx context.Context, u User, channel string) (Member, error) {
	if channel == "" {
		return Member{User: u}, nil
	}
	st, err := s.store.Standing(ctx, channel, u.ID)
	if err != nil {
		return Member{}, fmt.Errorf("standing of %s in %s: %w", u.ID, channel, err)
	}
	return Member{User: u, Channel: channel, Standing: st}, nil
}

// scope normalises the channel a request names for something that is
// either platform-wide (no channel) or a channel's own: "" stays "".
func scope(channel string) (string, error) {
	if strings.TrimSpace(channel) == "" {
		return "", nil
	}
	return NormalizeChannel(channel)
}

// actorIn is actor where a request acts: in the channel it names
// (normalised), or platform-wide when it names none, once actor may take
// action a there. Every request that manages or moderates something owned
// by a channel or the platform starts here.
func (s *Service) actorIn(ctx context.Context, actor User, channel string, a Action) (Member, error) {
	where, err := scope(channel)
	if err != nil {
		return Member{}, err
	}
	return s.allowedHere(ctx, actor, where, a)
}

// claimOwner counts a channel against CHAT_MAX_CHANNELS before something
// it owns (a role, a command, a filter) is stored: what a channel owns is
// bounded per channel, so the number of channels must be bounded too.
// The platform ("") is no channel.
func (s *Service) claimOwner(ctx context.Context, channel string) error {
	if channel == "" {
		return nil
	}
	return s.claimChannel(ctx, channel)
}

// requireIn is require for an action inside m's channel (or platform-wide
// when m has none).
func (s *Service) requireIn(m Member, a Action) error {
	if !Allowed(m.Role(), a) {
		err := deny(a)
		if m.Channel != "" {
			var e *Error
			if errors.As(err, &e) {
				e.Message += " in channel " + m.Channel
			}
		}
		return err
	}
	return nil
}

// requireHere is requireIn for actor in channel (normalised): its role
// there is read first.
func (s *Service) requireHere(ctx context.Context, actor User, channel string, a Action) error {
	_, err := s.allowedHere(ctx, actor, channel, a)
	return err
}

// allowedHere is actor as seen in channel (normalised; "" platform-wide),
// once actor may take action a there.
func (s *Service) allowedHere(ctx context.Context, actor User, channel string, a Action) (Member, error) {
	m, err := s.Member(ctx, actor, channel)
	if err != nil {
		return Member{}, err
	}
	if err := s.requireIn(m, a); err != nil {
		return Member{}, err
	}
	return m, nil
}

// requireOnIn is requireOn inside a channel: both roles are the ones held
// there.
func (s *Service) requireOnIn(actor Member, a Action, target Member) error {
	if err := s.requireIn(actor, a); err != nil {
		return err
	}
	if !AllowedOn(actor.Role(), a, target.Role()) {
		return &Error{Kind: KindForbidden, Reason: string(a),
			Message: fmt.Sprintf("a %s cannot %s a %s", actor.Role(), strings.ReplaceAll(string(a), "_", " "), target.Role())}
	}
	return nil
}

// ChannelRole is one role given in a channel, with the user's name.
type ChannelRole struct {
	UserID string `json:"user_id"`
	Name   string `json:"name"`
	Role   Role   `json:"role"`
}

// ChannelRoles lists the roles given in a channel, highest first, then by
// name (the channel's moderators, and platform-wide ones). A user deleted
// since keeps no entry in the answer.
func (s *Service) ChannelRoles(ctx context.Context, actor User, channel string) ([]ChannelRole, error) {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return nil, err
	}
	if err := s.requireHere(ctx, actor, channel, ActionListUsers); err != nil {
		return nil, err
	}
	roles, err := s.store.ChannelRoles(ctx, channel)
	if err != nil {
		return nil, fmt.Errorf("roles of %s: %w", channel, err)
	}
	ids := make([]string, 0, len(roles))
	for id := range roles {
		ids = append(ids, id)
	}
	users, err := s.store.UsersByID(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("roles of %s: users: %w", channel, err)
	}
	out := make([]ChannelRole, 0, len(roles))
	for id, r := range roles {
		if u, ok := users[id]; ok {
			out = append(out, ChannelRole{UserID: id, Name: u.Name, Role: r})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Role != out[j].Role {
			return out[i].Role.Above(out[j].Role)
		}
		return strings.ToLower(out[i].Name) < strings.ToLower(out[j].Name)
	})
	return out, nil
}

// SetChannelRole gives a user a role in one channel; RoleViewer takes the
// role given there back. The platform's broadcaster (CHAT_ADMIN_TOKEN)
// names and removes a channel's broadcaster; the channel's broadcaster
// names its moderators, VIPs and subscribers, as the permission table says
// of change_roles, with the roles held in that channel. Giving a role to
// one more user than Limits.ChannelRoles is LimitReached.
func (s *Service) SetChannelRole(ctx context.Context, actor User, channel, id string, role Role) (Member, error) {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return Member{}, err
	}
	if !role.Valid() {
		return Member{}, Invalid("role", "must be one of broadcaster, moderator, vip, subscriber, viewer")
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return Member{}, err
	}
	am, err := s.Member(ctx, actor, channel)
	if err != nil {
		return Member{}, err
	}
	tm, err := s.Member(ctx, t, channel)
	if err != nil {
		return Member{}, err
	}
	if role == RoleBroadcaster || tm.Standing.Role == RoleBroadcaster {
		// A channel's broadcaster is named by the platform, not by a peer.
		if err := s.require(actor, ActionNameBroadcaster); err != nil {
			return Member{}, err
		}
	} else {
		if err := s.requireOnIn(am, ActionChangeRoles, tm); err != nil {
			return Member{}, err
		}
		if !am.Role().Above(role) {
			return Member{}, Forbidden(fmt.Sprintf("a %s cannot grant the %s role", am.Role(), role))
		}
	}
	next := role
	if role == RoleViewer {
		next = ""
	}
	if next != "" {
		if err := s.claimOwner(ctx, channel); err != nil {
			return Member{}, err
		}
	}
	if next != tm.Standing.Role {
		log := modEntry(channel, ModRoleSet, am.Ref(), refp(tm.Ref()), "", s.clock())
		log.Role = next
		if next == "" {
			log.Action, log.Role = ModRoleRemove, tm.Standing.Role
		}
		if err := s.store.SetChannelRole(ctx, channel, id, tm.Standing.Role, next, s.limits.ChannelRoles, &log); err != nil {
			return Member{}, fmt.Errorf("role of %s in %s: %w", id, channel, err)
		}
	}
	tm.Standing.Role = next
	return tm, nil
}

// actorRef is actor as moderation log entries show it: with its role in
// channel (its platform-wide one when the standing cannot be read).
func (s *Service) actorRef(ctx context.Context, actor User, channel string) UserRef {
	m, err := s.Member(ctx, actor, channel)
	if err != nil {
		return actor.Ref()
	}
	return m.Ref()
}
