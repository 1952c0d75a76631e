package chat

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// maxUserNameRunes is Twitch's longest user name.
const maxUserNameRunes = 25

// CreateUserInput creates a user.
type CreateUserInput struct {
	Name string `json:"name"`
	Role Role   `json:"role,omitempty"`
}

func validateUserName(name string) error {
	if n := runeLen(name); n < 2 || n > maxUserNameRunes {
		return Invalid("name", fmt.Sprintf("must be 2..%d characters", maxUserNameRunes))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return Invalid("name", "use letters a-z, digits and '_'")
		}
	}
	for _, sys := range systemUsers {
		if strings.EqualFold(name, sys.Name) {
			return Invalid("name", "reserved for the system ("+sys.Name+" signs the chat's own messages and moderation)")
		}
	}
	return nil
}

// systemUsers are the names the chat signs with: nobody may take one, so
// no user can pass for the bot's replies or automod's actions.
var systemUsers = []UserRef{BotUser, AutomodUser}

// CreateUser adds a user (broadcaster) and returns its bearer token, which
// is shown only this once: only its hash is stored.
func (s *Service) CreateUser(ctx context.Context, actor User, in CreateUserInput) (User, string, error) {
	if err := s.require(actor, ActionManageUsers); err != nil {
		return User{}, "", err
	}
	name := strings.TrimSpace(in.Name)
	if err := validateUserName(name); err != nil {
		return User{}, "", err
	}
	role := in.Role
	if role == "" {
		role = RoleViewer
	}
	if !role.Valid() {
		return User{}, "", Invalid("role", "must be one of moderator, vip, subscriber, viewer")
	}
	if !actor.Role.Above(role) {
		return User{}, "", Forbidden(fmt.Sprintf("a %s cannot create a %s", actor.Role, role))
	}
	token, err := NewToken()
	if err != nil {
		return User{}, "", err
	}
	id, err := newID("u_")
	if err != nil {
		return User{}, "", err
	}
	u := User{ID: id, Name: name, Role: role, CreatedAt: s.clock(), TokenHash: HashToken(token)}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return User{}, "", fmt.Errorf("create user %s: %w", name, err)
	}
	return u, token, nil
}

// Users lists users by name (moderators).
func (s *Service) Users(ctx context.Context, actor User) ([]User, error) {
	if err := s.require(actor, ActionListUsers); err != nil {
		return nil, err
	}
	us, err := s.store.Users(ctx)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	sort.Slice(us, func(i, j int) bool { return strings.ToLower(us[i].Name) < strings.ToLower(us[j].Name) })
	return us, nil
}

// User returns one user: oneself, or anyone for moderators.
func (s *Service) User(ctx context.Context, actor User, id string) (User, error) {
	if id != actor.ID {
		if err := s.require(actor, ActionListUsers); err != nil {
			return User{}, err
		}
	}
	u, err := s.store.User(ctx, id)
	if err != nil {
		return User{}, fmt.Errorf("user %s: %w", id, err)
	}
	return u, nil
}

// loadTarget reads the user an action is about.
func (s *Service) loadTarget(ctx context.Context, id string) (User, error) {
	u, err := s.store.User(ctx, id)
	if err != nil {
		return User{}, fmt.Errorf("user %s: %w", id, err)
	}
	return u, nil
}

// SetRole changes a user's role (broadcaster). Nobody is made or unmade
// broadcaster through here: that role comes only from CHAT_ADMIN_TOKEN.
func (s *Service) SetRole(ctx context.Context, actor User, id string, role Role) (User, error) {
	if err := s.require(actor, ActionChangeRoles); err != nil {
		return User{}, err
	}
	if !role.Valid() {
		return User{}, Invalid("role", "must be one of moderator, vip, subscriber, viewer")
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return User{}, err
	}
	if err := s.requireOn(actor, ActionChangeRoles, t); err != nil {
		return User{}, err
	}
	if !actor.Role.Above(role) {
		return User{}, Forbidden(fmt.Sprintf("a %s cannot grant the %s role", actor.Role, role))
	}
	u, err := s.store.UpdateUser(ctx, id, t.Role, UserPatch{Role: &role}, nil, nil)
	if err != nil {
		return User{}, fmt.Errorf("set role of %s: %w", id, err)
	}
	return u, nil
}

// DeleteUser removes a user and revokes its token (broadcaster).
func (s *Service) DeleteUser(ctx context.Context, actor User, id string) error {
	if err := s.require(actor, ActionManageUsers); err != nil {
		return err
	}
	t, err := s.loadTarget(ctx, id)
	if err != nil {
		return err
	}
	if err := s.requireOn(actor, ActionManageUsers, t); err != nil {
		return err
	}
	if err := s.store.DeleteUser(ctx, id, t.Role); err != nil {
		return fmt.Errorf("delete user %s: %w", id, err)
	}
	return nil
}
