package chat

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// A command belongs to a channel (CommandInput.Channel) or to the
// platform. A channel's own are managed by its moderators (manage_commands
// with the role held there), platform-wide ones with a platform-wide role.
// In a channel, its own command wins over a platform-wide one with the
// same trigger.

// commandScope normalises the scope a request names and checks that actor
// may manage commands there.
func (s *Service) commandScope(ctx context.Context, actor User, channel string) (string, error) {
	am, err := s.actorIn(ctx, actor, channel, ActionManageCommands)
	return am.Channel, err
}

// CreateCommand adds a bot command (moderators) to a channel or the
// platform. Conflict if the trigger or an alias is taken there.
func (s *Service) CreateCommand(ctx context.Context, actor User, in CommandInput) (Command, error) {
	where, err := s.commandScope(ctx, actor, in.Channel)
	if err != nil {
		return Command{}, err
	}
	name, err := NormalizeTrigger(in.Command)
	if err != nil {
		return Command{}, err
	}
	now := s.clock()
	c := Command{Name: name, Channel: where, Response: strings.TrimSpace(in.Response), Aliases: in.Aliases, Enabled: true,
		CooldownSeconds: DefaultCooldownSeconds, UserLevel: RoleViewer, CreatedAt: now, UpdatedAt: now}
	if in.Enabled != nil {
		c.Enabled = *in.Enabled
	}
	if in.CooldownSeconds != nil {
		c.CooldownSeconds = *in.CooldownSeconds
	}
	if in.UserCooldownSeconds != nil {
		c.UserCooldownSeconds = *in.UserCooldownSeconds
	}
	if in.UserLevel != "" {
		c.UserLevel = in.UserLevel
	}
	if err := c.validate(); err != nil {
		return Command{}, err
	}
	if err := s.claimOwner(ctx, where); err != nil {
		return Command{}, err
	}
	if err := s.store.CreateCommand(ctx, c, s.limits.Commands); err != nil {
		return Command{}, fmt.Errorf("create command %s: %w", name, err)
	}
	return c, nil
}

// Commands lists bot commands sorted by name: without a channel the
// platform-wide ones; with one, what answers in that channel: its own,
// and the platform-wide ones none of its own shadows.
func (s *Service) Commands(ctx context.Context, actor *User, channel string) ([]Command, error) {
	if err := s.canRead(actor); err != nil {
		return nil, err
	}
	where, err := scope(channel)
	if err != nil {
		return nil, err
	}
	cs, err := s.store.Commands(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list commands: %w", err)
	}
	if where != "" {
		own, err := s.store.Commands(ctx, where)
		if err != nil {
			return nil, fmt.Errorf("list commands of %s: %w", where, err)
		}
		taken := map[string]bool{}
		for _, c := range own {
			for _, t := range c.Triggers() {
				taken[t] = true
			}
		}
		for _, c := range cs {
			if !taken[c.Name] {
				own = append(own, c)
			}
		}
		cs = own
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Name != cs[j].Name {
			return cs[i].Name < cs[j].Name
		}
		return cs[i].Channel > cs[j].Channel
	})
	return cs, nil
}

// Command returns one command by name or alias ("hello", "!Hello"): in a
// channel, the one that answers there (its own first).
func (s *Service) Command(ctx context.Context, actor *User, channel, name string) (Command, error) {
	if err := s.canRead(actor); err != nil {
		return Command{}, err
	}
	where, err := scope(channel)
	if err != nil {
		return Command{}, err
	}
	t, err := NormalizeTrigger(name)
	if err != nil {
		return Command{}, err
	}
	c, err := s.resolveCommand(ctx, where, t)
	if err != nil {
		return Command{}, fmt.Errorf("command %s: %w", t, err)
	}
	return c, nil
}

// resolveCommand finds the command trigger invokes in channel: the
// channel's own, else the platform-wide one.
func (s *Service) resolveCommand(ctx context.Context, channel, trigger string) (Command, error) {
	if channel != "" {
		c, err := s.store.Command(ctx, channel, trigger)
		if !errors.Is(err, ErrNotFound) {
			return c, err
		}
	}
	return s.store.Command(ctx, "", trigger)
}

// UpdateCommand changes a command of a channel or of the platform
// (moderators there).
func (s *Service) UpdateCommand(ctx context.Context, actor User, channel, name string, p CommandPatch) (Command, error) {
	where, err := s.commandScope(ctx, actor, channel)
	if err != nil {
		return Command{}, err
	}
	t, err := NormalizeTrigger(name)
	if err != nil {
		return Command{}, err
	}
	c, err := s.store.Command(ctx, where, t)
	if err != nil {
		return Command{}, fmt.Errorf("command %s: %w", t, err)
	}
	if p.Response != nil {
		c.Response = strings.TrimSpace(*p.Response)
	}
	if p.Aliases != nil {
		c.Aliases = *p.Aliases
	}
	if p.Enabled != nil {
		c.Enabled = *p.Enabled
	}
	if p.CooldownSeconds != nil {
		c.CooldownSeconds = *p.CooldownSeconds
	}
	if p.UserCooldownSeconds != nil {
		c.UserCooldownSeconds = *p.UserCooldownSeconds
	}
	if p.UserLevel != nil {
		c.UserLevel = *p.UserLevel
	}
	c.UpdatedAt = s.clock()
	c.Channel = where
	if err := c.validate(); err != nil {
		return Command{}, err
	}
	if err := s.store.UpdateCommand(ctx, c.Name, c); err != nil {
		return Command{}, fmt.Errorf("update command %s: %w", c.Name, err)
	}
	return c, nil
}

// DeleteCommand removes a command and its aliases from a channel or the
// platform (moderators there).
func (s *Service) DeleteCommand(ctx context.Context, actor User, channel, name string) error {
	where, err := s.commandScope(ctx, actor, channel)
	if err != nil {
		return err
	}
	t, err := NormalizeTrigger(name)
	if err != nil {
		return err
	}
	c, err := s.store.Command(ctx, where, t)
	if err != nil {
		return fmt.Errorf("command %s: %w", t, err)
	}
	if err := s.store.DeleteCommand(ctx, where, c.Name); err != nil {
		return fmt.Errorf("delete command %s: %w", c.Name, err)
	}
	return nil
}
