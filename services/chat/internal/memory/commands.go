package memory

import (
	"context"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// scope is the commands and filters of the platform or of one channel.
type scope struct {
	commands map[string]chat.Command
	triggers map[string]string // name or alias -> name
	filters  map[string]chat.Filter
	filterN  int64
}

// scope returns the scope named name, created when create is set; nil
// when it does not exist (reads never make the map grow). The caller
// holds s.mu.
func (s *Store) scope(name string, create bool) *scope {
	sc, ok := s.scopes[name]
	if !ok && create {
		sc = &scope{commands: map[string]chat.Command{}, triggers: map[string]string{}, filters: map[string]chat.Filter{}}
		s.scopes[name] = sc
	}
	return sc
}

func (sc *scope) triggersFree(c chat.Command) error {
	for _, t := range c.Triggers() {
		if owner, ok := sc.triggers[t]; ok && owner != c.Name {
			return &chat.Error{Kind: chat.KindConflict, Message: "trigger " + t + " is taken by " + owner, Reason: "command"}
		}
	}
	return nil
}

// CreateCommand implements chat.Store.
func (s *Store) CreateCommand(_ context.Context, c chat.Command, max int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(c.Channel, true)
	if _, ok := sc.triggers[c.Name]; ok {
		return &chat.Error{Kind: chat.KindConflict, Message: "command " + c.Name + " already exists", Reason: "command"}
	}
	if max > 0 && len(sc.commands) >= max {
		return chat.LimitReached(chat.QuotaCommands, max)
	}
	if err := sc.triggersFree(c); err != nil {
		return err
	}
	c.Aliases = append([]string(nil), c.Aliases...)
	sc.commands[c.Name] = c
	for _, t := range c.Triggers() {
		sc.triggers[t] = c.Name
	}
	return nil
}

// Command implements chat.Store.
func (s *Store) Command(_ context.Context, scope, trigger string) (chat.Command, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.command(scope, trigger)
}

// command finds a command by trigger; the caller holds s.mu.
func (s *Store) command(scope, trigger string) (chat.Command, error) {
	sc := s.scope(scope, false)
	if sc == nil {
		return chat.Command{}, chat.NotFound("command")
	}
	name, ok := sc.triggers[trigger]
	if !ok {
		return chat.Command{}, chat.NotFound("command")
	}
	c := sc.commands[name]
	c.Aliases = append([]string{}, c.Aliases...)
	return c, nil
}

// Commands implements chat.Store.
func (s *Store) Commands(_ context.Context, scope string) ([]chat.Command, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(scope, false)
	if sc == nil {
		return []chat.Command{}, nil
	}
	out := make([]chat.Command, 0, len(sc.commands))
	for _, c := range sc.commands {
		c.Aliases = append([]string{}, c.Aliases...)
		out = append(out, c)
	}
	return out, nil
}

// UpdateCommand implements chat.Store.
func (s *Store) UpdateCommand(_ context.Context, name string, c chat.Command) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(c.Channel, false)
	if sc == nil {
		return chat.NotFound("command")
	}
	old, ok := sc.commands[name]
	if !ok {
		return chat.NotFound("command")
	}
	if err := sc.triggersFree(c); err != nil {
		return err
	}
	for _, t := range old.Triggers() {
		delete(sc.triggers, t)
	}
	c.Count = old.Count // the counter is owned by CountCommand
	c.Aliases = append([]string(nil), c.Aliases...)
	sc.commands[name] = c
	for _, t := range c.Triggers() {
		sc.triggers[t] = name
	}
	return nil
}

// DeleteCommand implements chat.Store.
func (s *Store) DeleteCommand(_ context.Context, scope, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(scope, false)
	if sc == nil {
		return chat.NotFound("command")
	}
	c, ok := sc.commands[name]
	if !ok {
		return chat.NotFound("command")
	}
	for _, t := range c.Triggers() {
		delete(sc.triggers, t)
	}
	delete(sc.commands, name)
	return nil
}

// CountCommand implements chat.Store.
func (s *Store) CountCommand(_ context.Context, scope, name string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scope(scope, false)
	if sc == nil {
		return 0, chat.NotFound("command")
	}
	c, ok := sc.commands[name]
	if !ok {
		return 0, chat.NotFound("command")
	}
	c.Count++
	sc.commands[name] = c
	return c.Count, nil
}
