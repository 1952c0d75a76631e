package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/services/geoip/internal/apikeys"
)

// Keys are the API keys the lookups accept (GEOIP_KEYS_FILE), swapped whole on a reload.
type Keys struct{ set atomic.Pointer[apikeys.Set] }

// NewKeys holds set.
func NewKeys(set *apikeys.Set) *Keys {
	k := &Keys{}
	k.set.Store(set)
	return k
}

// Swap replaces the keys; requests in flight finish with the set they read.
func (k *Keys) Swap(set *apikeys.Set) { k.set.Store(set) }

// The answers about keys, in ipapi.co's words where it has some.
const (
	reasonRateLimited = "RateLimited"
	reasonInvalidKey  = "Invalid Key"
	msgUnknownKey     = "Invalid key: not one of this server's API keys"
	msgMissingKey     = "Missing key: send ?key=KEY or Authorization: Bearer KEY"
	msgTwoKeys        = "Two different keys: send ?key= or Authorization: Bearer, not both"
)

// ErrorBody is ipapi.co's error body, which every error of the lookup endpoints answers
// (429 included): error a boolean, reason a short name clients switch on.
type ErrorBody struct {
	Error   bool   `json:"error" doc:"Always true" example:"true"`
	Reason  string `json:"reason" doc:"RateLimited (429), Invalid Key (401, 403), Invalid Request (400), Not Found (404), Method Not Allowed (405), Internal Error (500, a panic included), Service Unavailable (503: the rate limiter unreachable)" example:"RateLimited"`
	Message string `json:"message" doc:"What happened, for people" example:"Rate limit exceeded, retry in 9 seconds"`
}

// ipapiErrors maps the library's errors on the lookup endpoints into ipapi.co's body.
var ipapiErrors = &apiserver.ErrorMap{
	Body: func(e *apiserver.Error) any {
		return ErrorBody{Error: true, Reason: reasonOf(e.Status), Message: e.Message}
	},
	Example: ErrorBody{Error: true, Reason: reasonRateLimited, Message: "Rate limit exceeded, retry in 9 seconds"},
}

func reasonOf(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return reasonRateLimited
	case http.StatusUnauthorized, http.StatusForbidden:
		return reasonInvalidKey
	case http.StatusBadRequest:
		return "Invalid Request"
	case http.StatusInternalServerError:
		return "Internal Error"
	}
	return http.StatusText(status)
}

// keySchemes document the two ways to send a key.
var keySchemes = []apiserver.SecurityScheme{
	{Name: "apiKey", Type: "apiKey", In: "query", Param: "key",
		Description: "An API key of GEOIP_KEYS_FILE, as ipapi.co takes it: ?key=KEY. It selects the key's rate limit; without one, the per-address limit applies."},
	{Name: "bearerKey", Type: "http", Scheme: "bearer",
		Description: "The same API key as Authorization: Bearer KEY."},
}

// identityLimit is the lookups' limit per key; nil when no keys file is configured, and
// then a key sent is ignored, as it was before keys existed.
func (a *API) identityLimit() *apiserver.IdentityLimit {
	if a.keys == nil {
		return nil
	}
	return &apiserver.IdentityLimit{Identify: a.identify, Security: keySchemes, Errors: map[int]string{
		http.StatusBadRequest:   `Two different keys in ?key= and Authorization, or ?key= twice (reason "Invalid Request")`,
		http.StatusUnauthorized: `An Authorization header that is not "Bearer KEY" (reason "Invalid Key")`,
		http.StatusForbidden:    `A key that is not one of GEOIP_KEYS_FILE's (reason "Invalid Key")`,
	}}
}

// identify names the caller by its key: none is anonymous, an unknown one a 403.
func (a *API) identify(c *gin.Context) (apiserver.Principal, bool, error) {
	k, err := a.keyOf(c.Request)
	if err != nil || !k.found {
		return apiserver.Principal{}, false, err
	}
	return apiserver.Principal{ID: k.key.Name, Limit: ratelimit.Limit{Max: k.key.Max, Window: k.key.Window}}, true, nil
}

// presented is the outcome of reading a request's key.
type presented struct {
	key   apikeys.Key
	found bool // a key was sent, and it is known
}

// keyOf reads the key from ?key= or Authorization: Bearer: none sent is no error, an
// unknown one is a 403, a malformed Authorization header a 401.
func (a *API) keyOf(r *http.Request) (presented, error) {
	text, ok, err := sentKey(r)
	if err != nil || !ok {
		return presented{}, err
	}
	var set *apikeys.Set
	if a.keys != nil {
		set = a.keys.set.Load()
	}
	key, found := set.Lookup(text)
	if !found {
		return presented{}, apiserver.ForbiddenError(msgUnknownKey)
	}
	return presented{key: key, found: true}, nil
}

// sentKey is the key of ?key= or Authorization: Bearer, the same key if both.
func sentKey(r *http.Request) (string, bool, error) {
	q, inQuery, err := queryKey(r.URL.RawQuery)
	if err != nil {
		return "", false, err
	}
	if _, ok := r.Header["Authorization"]; !ok {
		return q, inQuery, nil
	}
	b, berr := apiserver.BearerToken(r)
	if berr != nil {
		return "", false, berr
	}
	if inQuery && q != b {
		return "", false, apiserver.BadRequestError(msgTwoKeys)
	}
	return b, true, nil
}

// queryKey finds key= in a raw query without parsing the rest (a JSONP callback beside
// it): most lookups carry no query at all.
func queryKey(raw string) (string, bool, error) {
	if raw == "" || !strings.Contains(raw, "key=") {
		return "", false, nil
	}
	var val string
	found := false
	for part := range strings.SplitSeq(raw, "&") {
		v, ok := strings.CutPrefix(part, "key=")
		if !ok {
			continue
		}
		if found {
			return "", false, apiserver.BadRequestError("Give ?key= once")
		}
		if len(v) > 3*apikeys.MaxKeyLength {
			v = v[:3*apikeys.MaxKeyLength+1] // unknown anyway; not worth unescaping all
		}
		u, err := url.QueryUnescape(v)
		if err != nil {
			return "", false, apiserver.BadRequestError("?key= is not URL-encoded text")
		}
		val, found = u, true
	}
	return val, found, nil
}

// usageInput reads the key from the query or the Authorization header.
type usageInput struct {
	Key string `query:"key" maxLength:"256" doc:"The API key (or send it as Authorization: Bearer KEY)"`
}

// UsageAnswer is one key's use of the lookups today.
type UsageAnswer struct {
	Name     string `json:"name" doc:"The key's name in GEOIP_KEYS_FILE" example:"acme"`
	Day      string `json:"day" doc:"The UTC day counted, YYYY-MM-DD" example:"2026-11-27"`
	Requests int64  `json:"requests" doc:"Lookup requests with this key let through today, by every replica (theirs within a second)" example:"1234"`
	Limited  int64  `json:"limited" doc:"Lookup requests with this key refused with 429 today" example:"0"`
	Limit    int    `json:"limit" doc:"Requests per window: the key's rate limit" example:"1000"`
	Window   string `json:"window" doc:"The limit's window" example:"1m0s"`
}

// usageLimit is /usage's own limit per address: a client whose anonymous lookups are
// spent can still read its key's usage, and keys are no easier to guess here.
var usageLimit = &apiserver.RateLimit{Max: 60, Window: time.Minute}

// registerUsage declares GET /usage.
func (a *API) registerUsage() {
	apiserver.Register(a.srv, apiserver.Operation{
		Method: http.MethodGet, URL: "/usage", Tags: []string{tagKeys},
		Summary: "Today's use of an API key",
		Description: "Counts of the lookups made with the key today (UTC) and its limit. The key goes in ?key= or Authorization: Bearer. " +
			"Limited to 60 requests a minute per client address, counted apart from the lookups, so that keys cannot be guessed here.",
		RateLimit: usageLimit,
		Responses: map[int]apiserver.ResponseDoc{
			http.StatusUnauthorized: {Description: msgMissingKey},
			http.StatusForbidden:    {Description: msgUnknownKey},
		},
	}, func(c *apiserver.Context[struct{}], _ *usageInput) (apiserver.Response[batchHeaders, UsageAnswer], error) {
		var out apiserver.Response[batchHeaders, UsageAnswer]
		k, err := a.keyOf(c.Request)
		if err != nil {
			return out, err
		}
		if !k.found {
			return out, apiserver.UnauthorizedError(msgMissingKey)
		}
		u, err := a.srv.Usage(c.Request.Context(), k.key.Name)
		if err != nil {
			return out, err
		}
		out.Header.CacheControl = "no-store"
		out.Body = UsageAnswer{Name: k.key.Name, Day: u.Day, Requests: u.Allowed, Limited: u.Limited, Limit: k.key.Max, Window: k.key.Window.String()}
		return out, nil
	})
}
