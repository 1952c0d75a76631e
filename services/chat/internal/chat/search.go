package chat

import (
	"context"
	"fmt"
	"strings"
	"unicode"
)

// Search limits: a query is short and a page small, so one moderator's
// search costs the database a bounded amount of work.
const (
	MaxSearchRunes    = 200
	MaxSearchTerms    = 10
	MaxSearchLimit    = 100
	DefaultSearchHits = 20
)

// ParseSearch splits q into the websearch text and the prefix words
// (word*: letters and digits, at least 2 before the star); it refuses a
// query with nothing to search, too long or with too many terms.
func ParseSearch(q string) (text string, prefixes []string, err error) {
	q = strings.TrimSpace(q)
	if q == "" {
		return "", nil, Invalid("q", "is required")
	}
	if runeLen(q) > MaxSearchRunes {
		return "", nil, Invalid("q", fmt.Sprintf("at most %d characters", MaxSearchRunes))
	}
	if p := controlProblem(q); p != "" {
		return "", nil, Invalid("q", p)
	}
	fields := strings.Fields(q)
	if len(fields) > MaxSearchTerms {
		return "", nil, Invalid("q", fmt.Sprintf("at most %d terms", MaxSearchTerms))
	}
	var rest []string
	for _, f := range fields {
		if w, ok := strings.CutSuffix(f, "*"); ok && !strings.HasPrefix(f, `"`) {
			w = strings.ToLower(strings.TrimLeft(w, "-"))
			if runeLen(w) < 2 || strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
				return "", nil, Invalid("q", fmt.Sprintf("a prefix (%s) is 2 or more letters or digits and a *", f))
			}
			prefixes = append(prefixes, w)
			continue
		}
		rest = append(rest, f)
	}
	return strings.Join(rest, " "), prefixes, nil
}

// Search finds messages of channel whose text matches q (moderators
// there): words, "phrases", word* prefixes, optionally only userID's,
// newest first, below before (the previous page's last id). It reads the
// archive only, which follows the live chat by its lag.
func (s *Service) Search(ctx context.Context, actor User, channel, q, userID string, before int64, limit int) ([]Message, error) {
	channel, err := NormalizeChannel(channel)
	if err != nil {
		return nil, err
	}
	if err := s.requireHere(ctx, actor, channel, ActionReadModLog); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = DefaultSearchHits
	}
	if limit < 1 || limit > MaxSearchLimit {
		return nil, Invalid("limit", fmt.Sprintf("must be 1..%d", MaxSearchLimit))
	}
	if before < 0 {
		return nil, Invalid("before", "must be a message id")
	}
	text, prefixes, err := ParseSearch(q)
	if err != nil {
		return nil, err
	}
	searcher, ok := s.archive.(ArchiveSearcher)
	if !ok {
		return nil, &Error{Kind: KindNotFound, Reason: ReasonNoArchive, Message: "search needs the archive (CHAT_DATABASE_URL), which this deployment does not have"}
	}
	ms, err := searcher.ArchiveSearch(ctx, SearchQuery{Channel: channel, Text: text, Prefixes: prefixes, UserID: userID, Before: before, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", channel, err)
	}
	return ms, nil
}
