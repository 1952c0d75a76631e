package apiserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

const authContextKey = "apiserver.auth"

// The answers of authenticated routes, named once for the handlers and for
// the OpenAPI document that describes them.
const (
	msgMissingHeader   = "Missing authorization header"
	msgMalformedHeader = "Invalid authorization header format. Expected: Bearer <token>"
	msgInvalidToken    = "Invalid token"

	docUnauthorized = "No Authorization header (message \"" + msgMissingHeader + "\"), or not `Bearer <token>` (message \"" + msgMalformedHeader + "\")"
	docForbidden    = "Wrong token: not API_TOKEN (message \"" + msgInvalidToken + "\"), or the TokenValidator answered valid: false (message: its error, else \"" + msgInvalidToken + "\")"
)

// authenticate checks the bearer token. Missing or malformed header: 401
// with WWW-Authenticate. Wrong token or a validator's valid=false: 403.
func (s *Server[A]) authenticate(r *http.Request) (A, *Error) {
	var zero A
	token, err := BearerToken(r)
	if err != nil {
		return zero, err
	}
	if v := s.cfg.TokenValidator; v != nil {
		res := v(token, r)
		if res.Err != nil {
			return zero, toError(res.Err, !s.set.production)
		}
		if !res.Valid {
			msg := res.Error
			if msg == "" {
				msg = msgInvalidToken
			}
			return zero, ForbiddenError(msg)
		}
		return res.Context, nil
	}
	// Hashing both sides makes the comparison constant-time whatever the
	// lengths; with no token configured every token is refused.
	sum := sha256.Sum256([]byte(token))
	if s.tokenHash == nil || subtle.ConstantTimeCompare(sum[:], s.tokenHash) != 1 {
		return zero, ForbiddenError(msgInvalidToken)
	}
	return zero, nil
}

// BearerToken reads the token of the request's "Authorization: Bearer
// <token>" header with the rule of authenticated endpoints, for a handler
// that checks a token itself (an endpoint whose token is optional, a
// WebSocket handshake): no header is a 401 "Missing authorization header",
// anything but the scheme (case-insensitive, RFC 9110 11.1), one space and
// one word is a 401 "Invalid authorization header format. Expected:
// Bearer <token>", both with WWW-Authenticate: Bearer. Compare err with
// nil before storing it in an error interface.
func BearerToken(r *http.Request) (token string, err *Error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", UnauthorizedError(msgMissingHeader)
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", UnauthorizedError(msgMalformedHeader)
	}
	return token, nil
}

// AuthenticateToken is the seed's authenticateToken hook as gin
// middleware: every route of a group that uses it requires the token, and
// handlers read the context with AuthFrom.
func (s *Server[A]) AuthenticateToken() gin.HandlerFunc { return s.authMiddleware(nil) }

// authMiddleware authenticates, answering failures through m (nil: the
// standard body).
func (s *Server[A]) authMiddleware(m *ErrorMap) gin.HandlerFunc {
	return func(c *gin.Context) {
		a, err := s.authenticate(c.Request)
		if err != nil {
			s.answerError(c, err, m)
			return
		}
		c.Set(authContextKey, a)
		c.Next()
	}
}

// AuthFrom returns the auth context that AuthenticateToken (or an
// authenticated endpoint) stored on the request.
func AuthFrom[A any](c *gin.Context) (A, bool) {
	v, ok := c.Get(authContextKey)
	if !ok {
		var zero A
		return zero, false
	}
	a, ok := v.(A)
	return a, ok
}

func (s *Server[A]) warnUnprotectedAuth() {
	if s.cfg.TokenValidator == nil && s.tokenHash == nil && s.docs.hasAuthenticated() {
		s.log.Warn("authenticated endpoints are declared but neither API_TOKEN nor a TokenValidator is configured: they refuse every request")
	}
}
