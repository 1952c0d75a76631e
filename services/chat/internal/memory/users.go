package memory

import (
	"context"
	"crypto/subtle"
	"strings"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// CreateUser implements chat.Store.
func (s *Store) CreateUser(_ context.Context, u chat.User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tokens[u.TokenHash]; ok {
		return &chat.Error{Kind: chat.KindConflict, Message: "token already in use", Reason: "token"}
	}
	if _, ok := s.names[strings.ToLower(u.Name)]; ok {
		return &chat.Error{Kind: chat.KindConflict, Message: "user name " + u.Name + " is taken", Reason: "name"}
	}
	if _, ok := s.users[u.ID]; ok {
		return &chat.Error{Kind: chat.KindConflict, Message: "user id is taken", Reason: "id"}
	}
	s.users[u.ID] = u
	s.names[strings.ToLower(u.Name)] = u.ID
	s.tokens[u.TokenHash] = u.ID
	return nil
}

// User implements chat.Store.
func (s *Store) User(_ context.Context, id string) (chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return chat.User{}, chat.NotFound("user")
	}
	return u, nil
}

// UserByTokenHash implements chat.Store.
func (s *Store) UserByTokenHash(_ context.Context, hash string) (chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.tokens[hash]
	if !ok {
		return chat.User{}, chat.NotFound("user")
	}
	u := s.users[id]
	// The map lookup already matched; compare once more in constant time
	// so this path never leaks timing about a stored hash.
	if subtle.ConstantTimeCompare([]byte(u.TokenHash), []byte(hash)) != 1 {
		return chat.User{}, chat.NotFound("user")
	}
	return u, nil
}

// ProvisionUser implements chat.Store.
func (s *Store) ProvisionUser(_ context.Context, u chat.User, names []string) (chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, exists := s.users[u.ID]
	for _, name := range names {
		lname := strings.ToLower(name)
		if owner, ok := s.names[lname]; ok && owner != u.ID {
			continue
		}
		if !exists {
			u.Name = name
			u.TokenHash = ""
			s.users[u.ID] = u
			s.names[lname] = u.ID
			return u, nil
		}
		if cur.Name != name {
			delete(s.names, strings.ToLower(cur.Name))
			s.names[lname] = u.ID
			cur.Name = name
			s.users[u.ID] = cur
		}
		return cur, nil
	}
	if exists {
		return cur, nil
	}
	return chat.User{}, &chat.Error{Kind: chat.KindConflict, Message: "every name this user may take is taken", Reason: "name"}
}

// UsersByID returns the users among ids that exist (live delivery's
// recheck of its sockets' users; the Redis engine has the same method).
func (s *Store) UsersByID(_ context.Context, ids []string) (map[string]chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]chat.User, len(ids))
	for _, id := range ids {
		if u, ok := s.users[id]; ok {
			out[id] = u
		}
	}
	return out, nil
}

// Users implements chat.Store.
func (s *Store) Users(_ context.Context) ([]chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]chat.User, 0, len(s.users))
	for _, u := range s.users {
		out = append(out, u)
	}
	return out, nil
}

// UpdateUser implements chat.Store.
func (s *Store) UpdateUser(_ context.Context, id string, ifRole chat.Role, p chat.UserPatch, ev *chat.Event, log *chat.ModEntry) (chat.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return chat.User{}, chat.NotFound("user")
	}
	if u.Role != ifRole {
		return chat.User{}, chat.Conflict("the user's role changed meanwhile; try again")
	}
	if p.Role != nil {
		u.Role = *p.Role
	}
	if p.TimedOutUntil != nil {
		u.TimedOutUntil = *p.TimedOutUntil
	}
	if p.Banned != nil {
		u.Banned = *p.Banned
	}
	if p.ModReason != nil {
		u.ModReason = *p.ModReason
	}
	s.users[id] = u
	if ev != nil {
		s.append(s.channel(ev.Channel), *ev)
	}
	s.recordModp(log)
	if p.Banned != nil && *p.Banned {
		s.revoke(chat.Notice{Revoke: chat.RevokeBanned, User: id})
	}
	return u, nil
}

// DeleteUser implements chat.Store.
func (s *Store) DeleteUser(_ context.Context, id string, ifRole chat.Role) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return chat.NotFound("user")
	}
	if u.Role != ifRole {
		return chat.Conflict("the user's role changed meanwhile; try again")
	}
	delete(s.users, id)
	delete(s.names, strings.ToLower(u.Name))
	delete(s.tokens, u.TokenHash)
	delete(s.sends, id)
	s.revoke(chat.Notice{Revoke: chat.RevokeDeleted, User: id})
	return nil
}
