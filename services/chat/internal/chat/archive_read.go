package chat

import (
	"context"
	"fmt"
	"time"
)

// Reading across tiers: the engine's window answers what it holds; a page
// that reaches past the window's start continues from the archive, with
// the same ids and fields, so a client paging backwards sees no seam.

// pastWindow completes the window's page ms of channel from the archive
// when the page wants messages the window no longer holds.
func (s *Service) pastWindow(ctx context.Context, channel string, p Page, ms []Message) ([]Message, error) {
	if s.archive == nil {
		return ms, nil
	}
	if p.After > 0 || p.FromStart {
		// Forward: the archive holds what lies between After and the
		// window's first message, if the window starts later.
		if len(ms) > 0 && ms[0].ID == p.After+1 {
			return ms, nil
		}
		if len(ms) == 0 && p.Before <= 0 {
			// The window always holds a channel's newest messages: with
			// none after After, there are none anywhere (a client polling
			// at the live edge costs the archive nothing).
			return ms, nil
		}
		q := Page{After: p.After, FromStart: true, Limit: p.Limit, Before: p.Before}
		if len(ms) > 0 {
			q.Before = ms[0].ID
		}
		old, err := s.archive.ArchiveMessages(ctx, channel, q)
		if err != nil {
			return nil, fmt.Errorf("list messages: archive: %w", err)
		}
		out := append(old, ms...)
		return out[:min(len(out), p.Limit)], nil
	}
	// Backward: the archive holds what lies before the window's first
	// message (or before Before when the window has nothing below it).
	if len(ms) >= p.Limit || len(ms) == 0 && p.Before <= 0 {
		// A full page, or a channel whose window is empty: no messages.
		return ms, nil
	}
	q := Page{Before: p.Before, Limit: p.Limit - len(ms)}
	if len(ms) > 0 {
		q.Before = ms[0].ID
	}
	if q.Before == 1 {
		return ms, nil
	}
	old, err := s.archive.ArchiveMessages(ctx, channel, q)
	if err != nil {
		return nil, fmt.Errorf("list messages: archive: %w", err)
	}
	return append(old, ms...), nil
}

// MaxReplayRange bounds one replay's time range: a page is at most
// MaxLimit messages anyway; the bound keeps a query's scan to a few
// partitions.
const MaxReplayRange = 31 * 24 * time.Hour

// Replay returns the messages of channel created in [from, to), in channel
// order, up to limit, after the message id after (the previous page's
// last): a VOD's chat. It reads the archive, which is at most its lag
// (chat_archive_lag_seconds) behind the live chat. Without an archive it
// is KindNotFound with Reason ReasonNoArchive.
func (s *Service) Replay(ctx context.Context, actor *User, channel string, from, to time.Time, after int64, limit int) ([]Message, error) {
	if err := s.canRead(actor); err != nil {
		return nil, err
	}
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return nil, err
	}
	var v validation
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		v.add("limit", "must be 1..%d", MaxLimit)
	}
	if from.IsZero() {
		v.add("from", "is required (RFC 3339)")
	}
	if to.IsZero() {
		v.add("to", "is required (RFC 3339)")
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		v.add("to", "must be after from")
	}
	if to.Sub(from) > MaxReplayRange {
		v.add("to", "must be at most %d days after from", int(MaxReplayRange/(24*time.Hour)))
	}
	if after < 0 {
		v.add("after", "must be a message id")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	if s.archive == nil {
		return nil, &Error{Kind: KindNotFound, Reason: ReasonNoArchive, Message: "replay by time needs the archive (CHAT_DATABASE_URL), which this deployment does not have"}
	}
	ms, err := s.archive.ArchiveReplay(ctx, channel, from.UTC(), to.UTC(), after, limit)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return ms, nil
}

// ReasonNoArchive is the Reason of what needs an archive where there is
// none.
const ReasonNoArchive = "no_archive"
