package chat

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Options configure a Service.
type Options struct {
	// Now is the clock; tests inject one to step through cooldowns, slow
	// mode and timeouts without sleeping. Default time.Now.
	Now func() time.Time
	// PublicRead lets anonymous callers read messages, channels and commands.
	PublicRead bool
	// Logger receives what cannot be returned (a bot reply that failed after
	// the user's message was stored). Default slog.Default().
	Logger *slog.Logger
	// Limits bound filters, commands and channels; zero fields take the defaults.
	Limits Limits
	// SendLimit is the per-user message rate (CHAT_SEND_LIMIT); zero is off.
	SendLimit SendLimit
	// Identities checks the platform's tokens (CHAT_JWT_SECRET,
	// CHAT_JWKS_URL; see jwtidentity); nil accepts chat tokens only.
	Identities Identities
	// ClosedChannels turns CHAT_OPEN_CHANNELS off: a viewer's message
	// cannot open a channel (see openchannels.go).
	ClosedChannels bool
	// SendHook, when set, judges every send before it is stored
	// (CHAT_SEND_HOOK_URL); SendHookFailOpen lets a send through when it
	// does not answer (CHAT_SEND_HOOK_FAIL=open).
	SendHook         SendHook
	SendHookFailOpen bool
}

// Service holds the rules of the chat and runs them against a Store. It is
// safe for concurrent use; several instances may share one Redis. Its
// methods live in one file per concern: service_auth.go, service_messages.go
// (send, read, delete), service_channels.go (slow mode), service_commands.go,
// service_users.go (roles), service_moderation.go, service_filters.go.
type Service struct {
	store      Store
	now        func() time.Time
	publicRead bool
	log        *slog.Logger

	limits     Limits
	sendLimit  SendLimit
	claimed    claimedChannels
	open       openChannels
	identities Identities
	// openChannels is CHAT_OPEN_CHANNELS.
	openChannels bool

	sendHook         SendHook
	sendHookFailOpen bool

	mu      sync.Mutex
	filters map[string]*compiledFilter // compiled once per filter version
}

// NewService returns a Service over store.
func NewService(store Store, opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{store: store, now: opts.Now, publicRead: opts.PublicRead, log: opts.Logger,
		limits: opts.Limits.WithDefaults(), sendLimit: opts.SendLimit, identities: opts.Identities, filters: map[string]*compiledFilter{},
		openChannels: !opts.ClosedChannels, sendHook: opts.SendHook, sendHookFailOpen: opts.SendHookFailOpen}
}

// Limits returns the limits in force.
func (s *Service) Limits() Limits { return s.limits }

// claimChannel makes sure the channel counts against the channel limit
// before anything is written to it.
func (s *Service) claimChannel(ctx context.Context, name string) error {
	if s.claimed.has(name) {
		return nil
	}
	if err := s.store.ClaimChannel(ctx, name, s.limits.Channels); err != nil {
		return fmt.Errorf("channel %s: %w", name, err)
	}
	s.claimed.add(name, s.limits.Channels)
	return nil
}

// Now is the service's clock (UTC, milliseconds): what "now" is for
// the modes and the shield a transport shows.
func (s *Service) Now() time.Time { return s.clock() }

// Events is the channel event log live delivery reads.
func (s *Service) Events() EventLog { return s.store }

// Ready checks that the store answers (for /readyz).
func (s *Service) Ready(ctx context.Context) error { return s.store.Ping(ctx) }

// PublicRead reports whether anonymous reading is on.
func (s *Service) PublicRead() bool { return s.publicRead }

// clock returns now in UTC at millisecond precision, the precision every
// engine stores, so what Send returns equals what a later read returns.
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

func deny(a Action) error {
	return &Error{Kind: KindForbidden, Message: fmt.Sprintf("your role may not %s (needs %s or higher)", strings.ReplaceAll(string(a), "_", " "), MinRoleFor(a)), Reason: string(a)}
}

func (s *Service) require(actor User, a Action) error {
	if !Allowed(actor.Role, a) {
		return deny(a)
	}
	return nil
}

func (s *Service) requireOn(actor User, a Action, target User) error {
	if err := s.require(actor, a); err != nil {
		return err
	}
	if !AllowedOn(actor.Role, a, target.Role) {
		return &Error{Kind: KindForbidden, Message: fmt.Sprintf("a %s cannot %s a %s", actor.Role, strings.ReplaceAll(string(a), "_", " "), target.Role), Reason: string(a)}
	}
	return nil
}

// canRead lets anonymous callers (actor nil) read while public reading is on.
func (s *Service) canRead(actor *User) error {
	if actor == nil {
		if s.publicRead {
			return nil
		}
		return &Error{Kind: KindUnauthorized, Message: "reading needs a bearer token"}
	}
	return s.require(*actor, ActionReadMessages)
}
