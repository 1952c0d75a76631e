package chat

import (
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// The links filter reads the link view of a message (folded, with IDN and
// bracketed dots made ".") one whitespace-separated token at a time. A
// token holds a link when it has
//
//   - a URL scheme followed by "//" (any scheme: https, ftp, chrome-extension...),
//   - a scheme that works without "//" (opaqueSchemes: javascript:, data:, mailto:...),
//   - a bare IPv4 address ("1.2.3.4/x", "1.2.3.4:8080"),
//   - a "www." host, or
//   - a host name ending in a public suffix from the Public Suffix List
//     (golang.org/x/net/publicsuffix: every ICANN top-level domain such as
//     .tk or .ninja, punycode or not, and the private suffixes such as
//     github.io).
//
// The link is masked from where it starts to the end of its token.

// opaqueSchemes are schemes that do something without "//" after them.
var opaqueSchemes = map[string]bool{
	"javascript": true, "vbscript": true, "data": true, "blob": true, "about": true, "file": true,
	"ftp": true, "mailto": true, "tel": true, "sms": true, "callto": true, "magnet": true,
	"intent": true, "market": true, "xmpp": true, "sip": true, "sips": true, "bitcoin": true,
	"geo": true, "skype": true, "tg": true, "steam": true, "irc": true, "ircs": true, "news": true,
}

func linkSpans(nt *normText) []span {
	v := nt.linkView()
	rs := v.runes
	var out []span
	for i := 0; i < len(rs); {
		if rs[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(rs) && rs[j] != ' ' {
			j++
		}
		if from, ok := linkIn(rs[i:j]); ok {
			out = append(out, nt.srcSpan(v, i+from, j))
		}
		i = j
	}
	return out
}

func isSchemeRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'
}

func isHostRune(r rune) bool { return isWordRune(r) || r == '-' || r == '.' }

// linkIn reports whether tok holds a link and where it starts.
func linkIn(tok []rune) (int, bool) {
	start, found := len(tok), false
	seen := func(at int) {
		if at < start {
			start = at
		}
		found = true
	}
	for k, r := range tok {
		if r != ':' {
			continue
		}
		s := k
		for s > 0 && isSchemeRune(tok[s-1]) {
			s--
		}
		for s < k && !(tok[s] >= 'a' && tok[s] <= 'z') { // a scheme starts with a letter
			s++
		}
		if s == k {
			continue
		}
		rest := tok[k+1:]
		if hasRunes(rest, "//") || len(rest) > 0 && opaqueSchemes[string(tok[s:k])] {
			seen(s)
		}
	}
	for a := 0; a < len(tok); {
		if !isHostRune(tok[a]) {
			a++
			continue
		}
		b := a
		for b < len(tok) && isHostRune(tok[b]) {
			b++
		}
		if isHost(tok[a:b]) {
			seen(a)
		}
		a = b
	}
	return start, found
}

// isHost reports whether rs (letters, digits, '-' and '.') names an IPv4
// address, a www. host or a host under a public suffix.
func isHost(rs []rune) bool {
	host := strings.Trim(string(rs), ".-")
	if !strings.Contains(host, ".") {
		return false
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" {
			return false
		}
	}
	if isIPv4(labels) || labels[0] == "www" {
		return true
	}
	ascii, err := idna.Punycode.ToASCII(host)
	if err != nil {
		return false
	}
	suffix, icann := publicsuffix.PublicSuffix(ascii)
	// Without a listed rule, PublicSuffix answers the last label, not ICANN.
	return (icann || strings.Contains(suffix, ".")) && len(suffix) < len(ascii)
}

func isIPv4(labels []string) bool {
	if len(labels) != 4 {
		return false
	}
	for _, l := range labels {
		if len(l) > 3 {
			return false
		}
		n := 0
		for i := 0; i < len(l); i++ {
			if l[i] < '0' || l[i] > '9' {
				return false
			}
			n = n*10 + int(l[i]-'0')
		}
		if n > 255 {
			return false
		}
	}
	return true
}
