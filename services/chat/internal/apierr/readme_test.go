package apierr

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// samples holds one error of every kind, and every variant that adds a
// field (a timeout's until, a ban's null until, a quota's limit...).
var samples = []error{
	chat.Invalid("message", "must not be empty"),
	&chat.Error{Kind: chat.KindUnauthorized, Message: "unknown bearer token"},
	&chat.Error{Kind: chat.KindForbidden, Reason: "timed_out", Until: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
	&chat.Error{Kind: chat.KindForbidden, Reason: "banned"},
	&chat.Error{Kind: chat.KindForbidden, Reason: "ban_users"},
	chat.NotFound("command"),
	&chat.Error{Kind: chat.KindConflict, Reason: "name"},
	chat.LimitReached(chat.QuotaCommands, 500),
	&chat.Error{Kind: chat.KindBlocked, Reason: "links", Message: "message blocked by a links filter (f3)"},
	&chat.Error{Kind: chat.KindBlocked, Reason: "blocked_term", Message: "message blocked by a blocked_term filter (f4); timeout",
		Consequence: &chat.Consequence{Action: chat.ActionTimeout, Penalty: chat.PenaltyTimeout}},
	&chat.Error{Kind: chat.KindForbidden, Reason: "account_too_new", Until: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
	&chat.Error{Kind: chat.KindSlowMode, Reason: "unique_chat", RetryAfter: time.Second},
	&chat.Error{Kind: chat.KindSlowMode, Reason: "slow_mode", RetryAfter: time.Second},
	&chat.Error{Kind: chat.KindSlowMode, Reason: chat.ReasonSendLimit, RetryAfter: time.Second},
	chat.Unavailable("send", errors.New("down")),
	chat.OutcomeUnknown("send", errors.New("timeout")),
	&chat.Error{Kind: chat.KindUnprocessable, Reason: chat.ReasonKeyReused},
	&chat.Error{Kind: chat.KindHistoryGone},
}

// vocabulary is every name an answer can add: body fields and headers.
var vocabulary = []string{FieldReason, FieldUntil, FieldLimit, FieldRetryAfter, FieldDetails, FieldConsequence, "Retry-After", "WWW-Authenticate"}

// names lists what an answer adds, by the README's words.
func names(a Answer) []string {
	var out []string
	for k := range a.Extra {
		out = append(out, k)
	}
	if len(a.Details) > 0 {
		out = append(out, FieldDetails)
	}
	if a.RetryAfter > 0 {
		out = append(out, "Retry-After")
	}
	if a.Challenge {
		out = append(out, "WWW-Authenticate")
	}
	return out
}

// table returns the rows of the README table whose header row starts with
// header, as cells.
func table(t *testing.T, readme, header string) [][]string {
	t.Helper()
	i := strings.Index(readme, header)
	if i < 0 {
		t.Fatalf("README: no table starting %q", header)
	}
	var rows [][]string
	for n, line := range strings.Split(readme[i:], "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if n < 2 { // the header and the |---| line
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	return rows
}

var backticked = regexp.MustCompile("`([^`]*)`")

// mentioned returns the vocabulary names a README cell mentions in
// backticks ("`until`", "header `Retry-After: 1`", "`details: [...]`").
func mentioned(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		name, _, _ := strings.Cut(m[1], ":")
		if slices.Contains(vocabulary, name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestREADMEKindTableMatchesTheMapping: the domain's table (kind, status)
// lists every kind once with the status For gives it.
func TestREADMEKindTableMatchesTheMapping(t *testing.T) {
	rows := table(t, readme(t), "| kind | status | carries |")
	status := map[string]string{}
	for _, r := range rows {
		status[strings.Trim(r[0], "`")] = r[1]
	}
	seen := map[string]bool{}
	for _, err := range samples {
		a, ok := For(err, InBody)
		if !ok {
			t.Fatalf("%v: not mapped", err)
		}
		seen[a.Code] = true
		got, ok := status[a.Code]
		if !ok {
			t.Errorf("README kind table lacks %s", a.Code)
			continue
		}
		if n, _ := strconv.Atoi(strings.Fields(got)[0]); n != a.Status {
			t.Errorf("README: %s is %q, the mapping answers %d", a.Code, got, a.Status)
		}
	}
	for k := range status {
		if !seen[k] {
			t.Errorf("README kind table has %s, which no sample has", k)
		}
	}
}

// TestREADMEStatusTableMatchesTheMapping: every status the mapping answers
// has a row in the HTTP error table, and the row names exactly the fields
// and headers the answers of that status carry (and the field paths of
// their details). It fails when either side changes alone.
func TestREADMEStatusTableMatchesTheMapping(t *testing.T) {
	text := readme(t)
	rows := table(t, text, "| Status | When | Extra fields |")
	byStatus := map[int][]string{}
	for _, r := range rows {
		n, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatalf("README status table: %q is no status", r[0])
		}
		byStatus[n] = r
	}
	want := map[int][]string{}
	for _, err := range samples {
		a, _ := For(err, InBody)
		row, ok := byStatus[a.Status]
		if !ok {
			t.Errorf("README status table lacks %d (%s)", a.Status, a.Code)
			continue
		}
		want[a.Status] = append(want[a.Status], names(a)...)
		for _, d := range a.Details {
			if !strings.Contains(row[2], `"`+d.Field+`"`) {
				t.Errorf("README %d row does not name the field %q", a.Status, d.Field)
			}
		}
	}
	for status, w := range want {
		got := sorted(mentioned(byStatus[status][2]))
		if w := sorted(w); !slices.Equal(got, w) {
			t.Errorf("README %d row names %v; the answers carry %v", status, got, w)
		}
	}
	// The WebSocket's error frame lists the same fields.
	frame := table(t, text, "| `type` | fields |")
	i := slices.IndexFunc(frame, func(r []string) bool { return r[0] == "`error`" })
	if i < 0 {
		t.Fatal("README: no error frame row")
	}
	var all []string
	for _, w := range want {
		all = append(all, w...)
	}
	for _, name := range sorted(all) {
		if name == "Retry-After" || name == "WWW-Authenticate" {
			continue // headers: REST only
		}
		if !strings.Contains(frame[i][1], "`"+name+"`") {
			t.Errorf("README error frame row lacks %s", name)
		}
	}
}
