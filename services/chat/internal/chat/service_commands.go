package chat

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// CreateCommand adds a bot command (moderators). Conflict if the trigger or
// an alias is taken.
func (s *Service) CreateCommand(ctx context.Context, actor User, in CommandInput) (Command, error) {
	if err := s.require(actor, ActionManageCommands); err != nil {
		return Command{}, err
	}
	name, err := NormalizeTrigger(in.Command)
	if err != nil {
		return Command{}, err
	}
	now := s.clock()
	c := Command{Name: name, Response: strings.TrimSpace(in.Response), Aliases: in.Aliases, Enabled: true,
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
	if err := s.store.CreateCommand(ctx, c, s.limits.Commands); err != nil {
		return Command{}, fmt.Errorf("create command %s: %w", name, err)
	}
	return c, nil
}

// Commands lists the bot commands, sorted by name.
func (s *Service) Commands(ctx context.Context, actor *User) ([]Command, error) {
	if err := s.canRead(actor); err != nil {
		return nil, err
	}
	cs, err := s.store.Commands(ctx)
	if err != nil {
		return nil, fmt.Errorf("list commands: %w", err)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs, nil
}

// Command returns one command by name or alias ("hello", "!Hello").
func (s *Service) Command(ctx context.Context, actor *User, name string) (Command, error) {
	if err := s.canRead(actor); err != nil {
		return Command{}, err
	}
	t, err := NormalizeTrigger(name)
	if err != nil {
		return Command{}, err
	}
	c, err := s.store.Command(ctx, t)
	if err != nil {
		return Command{}, fmt.Errorf("command %s: %w", t, err)
	}
	return c, nil
}

// UpdateCommand changes a command (moderators).
func (s *Service) UpdateCommand(ctx context.Context, actor User, name string, p CommandPatch) (Command, error) {
	if err := s.require(actor, ActionManageCommands); err != nil {
		return Command{}, err
	}
	t, err := NormalizeTrigger(name)
	if err != nil {
		return Command{}, err
	}
	c, err := s.store.Command(ctx, t)
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
	if err := c.validate(); err != nil {
		return Command{}, err
	}
	if err := s.store.UpdateCommand(ctx, c.Name, c); err != nil {
		return Command{}, fmt.Errorf("update command %s: %w", c.Name, err)
	}
	return c, nil
}

// DeleteCommand removes a command and its aliases (moderators).
func (s *Service) DeleteCommand(ctx context.Context, actor User, name string) error {
	if err := s.require(actor, ActionManageCommands); err != nil {
		return err
	}
	t, err := NormalizeTrigger(name)
	if err != nil {
		return err
	}
	c, err := s.store.Command(ctx, t)
	if err != nil {
		return fmt.Errorf("command %s: %w", t, err)
	}
	if err := s.store.DeleteCommand(ctx, c.Name); err != nil {
		return fmt.Errorf("delete command %s: %w", c.Name, err)
	}
	return nil
}
