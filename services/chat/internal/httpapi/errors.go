package httpapi

import (
	"errors"

	"github.com/apistack/platform/services/chat/internal/apierr"
	"github.com/apistack/platform/services/chat/internal/chat"
)

// Where a request's fields come from, for the "details" of a 400.
const (
	inBody   = apierr.InBody
	inQuery  = apierr.InQuery
	inParams = apierr.InParams
)

// StatusError turns an error from chat.Service into the HTTP answer:
// apierr.HTTPError, the mapping the WebSocket's error frames use too.
// in says where the request's fields came from (body, query, params) so
// the details read like the library's own.
func StatusError(err error, in string) error { return apierr.HTTPError(err, in) }

// errUnavailable is what an authenticated request gets when its token could
// not be checked because the store is down.
var errUnavailable = chat.Unavailable("authenticate", errors.New("the token could not be checked"))
