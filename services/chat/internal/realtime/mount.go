package realtime

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/services/chat/internal/apierr"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/wsbuf"
)

// WSPath is the WebSocket endpoint.
const WSPath = "/api/v1/ws"

// wsInput is the query of GET /api/v1/ws.
type wsInput struct {
	Channel string `query:"channel" maxLength:"32" doc:"Channel to subscribe to (default general)"`
	Since   string `query:"since" pattern:"^[0-9]+(-[0-9]+)?([.][0-9a-f]{1,8})?$" doc:"Recover every event after this cursor, as the last event's cursor was written (\"42.9f2c01a4\", \"42-1.5b0e77c3\"; a bare message id \"42\" works too, unchecked), then go live. A cursor whose epoch no longer matches the log (the store lost or reset it) is answered recovered:false"`
}

// Mount starts a Hub on svc, fed by src, and registers GET /api/v1/ws (in /docs, with
// the protocol) on srv; the browser client is mounted apart (web.Mount).
// The hub closes its connections with 1001 when srv stops. Presence is
// counted in process unless opts.Presence says otherwise (redispresence
// with REDIS_URL).
func Mount(srv *apiserver.Server[chat.User], svc *chat.Service, src Sources, opts Options) (*Hub, error) {
	if srv == nil {
		return nil, errors.New("realtime: a server is required")
	}
	if opts.Logger == nil {
		opts.Logger = srv.Logger()
	}
	h, err := NewHub(svc, src, opts)
	if err != nil {
		return nil, err
	}
	if err := h.metrics.register(srv.Registry()); err != nil {
		_ = h.Close(context.Background())
		return nil, err
	}
	srv.OnShutdown(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return h.Close(ctx)
	})
	origins := newOriginCheck(srv.CORSOrigins())
	apiserver.Register(srv, apiserver.Operation{
		Method:      http.MethodGet,
		URL:         WSPath,
		Summary:     "Live messages over a WebSocket",
		Description: Protocol,
		Tags:        []string{"Live"},
		// No NoTimeouts: the handshake checks in accept run under the server's read
		// deadlines; the accepted upgrade (a hijack) clears them.
		Status: http.StatusSwitchingProtocols,
		// Connection attempts count against the client's global limit like
		// any request; RATE_LIMIT_ALLOW exempts load tests.
		Responses: map[int]apiserver.ResponseDoc{
			http.StatusUnauthorized:       {Description: "Malformed Authorization header, or unknown token"},
			http.StatusForbidden:          {Description: "Origin not allowed"},
			http.StatusUpgradeRequired:    {Description: "Not a WebSocket handshake"},
			http.StatusTooManyRequests:    {Description: "Too many sockets for this user, from this address or its network, or sockets on too many channels from this address (CHAT_WS_MAX_SOCKETS_PER_USER, CHAT_WS_MAX_SOCKETS_PER_IP, CHAT_WS_MAX_SOCKETS_PER_NET, CHAT_WS_MAX_CHANNELS_PER_IP); see `reason` and `Retry-After`"},
			http.StatusServiceUnavailable: {Description: "The token could not be checked (store unavailable), or this replica holds CHAT_WS_MAX_SOCKETS sockets, or anonymous sockets hold all but the share kept for users with a token (CHAT_WS_USER_RESERVE_PERCENT); see `reason`"},
		},
	}, func(c *apiserver.Context[chat.User], in *wsInput) (apiserver.NoBody, error) {
		return apiserver.NoBody{}, h.accept(c.Context, in, origins, srv.ClientKey(c.Request))
	})
	return h, nil
}

// accept checks the handshake and hands the connection to its own
// goroutines; the handler returns at once, so the request's deep stack is
// not kept for the life of the socket. ip names the client for the
// per-address limits: apiserver's ClientKey, which counts an IPv6 client by
// its prefix (RATE_LIMIT_IPV6_PREFIX, /64) as the rate limiter does.
func (h *Hub) accept(c *gin.Context, in *wsInput, origins originCheck, ip string) error {
	r := c.Request
	channel, err := chat.NormalizeChannel(in.Channel)
	if err != nil {
		return apiserver.ValidationError(apiserver.FieldError{Field: "query.channel", Message: "use 1..32 of a-z, 0-9, '-' and '_', starting with a letter or digit"})
	}
	var since *chat.Cursor
	if in.Since != "" {
		cur, err := chat.ParseCursor(in.Since)
		if err != nil {
			return apiserver.ValidationError(apiserver.FieldError{Field: "query.since", Message: "a cursor like 42, 42-1 or 42-1.9f2c01a4"})
		}
		since = &cur
	}
	if !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket") {
		return apiserver.NewError(http.StatusUpgradeRequired, "This endpoint speaks WebSocket only (Connection: Upgrade, Upgrade: websocket)")
	}
	if !origins.allowed(r) {
		return apiserver.ForbiddenError("Origin " + r.Header.Get("Origin") + " is not allowed (CORS_ORIGIN)")
	}
	var user *chat.User
	token := protocolToken(r)
	if r.Header.Get("Authorization") != "" {
		// The token is optional here, so the route is not an authenticated
		// one: the library's header rule (malformed 401), then the one
		// token check every transport makes, answered by the one mapping:
		// unknown 401, store down 503, as over REST.
		t, herr := apiserver.BearerToken(r)
		if herr != nil {
			return herr
		}
		token = t
	}
	var expires time.Time
	if token != "" {
		ss, err := h.svc.AuthenticateSession(r.Context(), token)
		if err != nil {
			return apierr.HTTPError(err, apierr.InQuery)
		}
		user, expires = &ss.User, ss.Expires
	}
	// The origin was checked above against CORS_ORIGIN, which is the
	// service's one list of allowed sites.
	if err := h.admit(ip, channel, user); err != nil {
		return err
	}
	var userID string
	if user != nil {
		userID = user.ID
	}
	w := &keepSocket{ResponseWriter: c.Writer}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, Subprotocols: []string{ChatProtocol}})
	if err != nil {
		h.release(ip, channel, userID)
		return nil // Accept has answered the request
	}
	cn := newConn(h, ws, w.conn, w.br, channel, user)
	cn.ip = ip
	if !h.addConn(cn) {
		h.release(ip, channel, userID)
		_ = ws.Close(websocket.StatusGoingAway, "server shutting down; reconnect with since")
		return nil
	}
	cn.expireAt(expires)
	go cn.serve(since, user == nil && !h.svc.PublicRead())
	return nil
}

// keepSocket hands websocket.Accept the upgraded connection with wsbuf's
// buffers in place of the 4 KB reader and 4 KB writer net/http used for the
// request (they would stay with the socket for as long as it is open, most
// of what an idle socket costs), and keeps the socket, which the library
// does not expose: closing a connection sets deadlines on it to bound the
// close handshake (conn.closeWith).
type keepSocket struct {
	gin.ResponseWriter // gin's, whose WriteHeaderNow Accept needs
	conn               *wsbuf.Conn
	br                 *bufio.Reader
}

func (w *keepSocket) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, rw, err := wsbuf.Hijack(w.ResponseWriter)
	if err != nil {
		return nil, nil, err
	}
	w.conn, w.br = nc, rw.Reader
	return nc, rw, nil
}

// ChatProtocol and TokenProtocol let a browser, which cannot set an
// Authorization header on a WebSocket, send its token in the handshake:
// new WebSocket(url, ["chat", "bearer." + token]). The server selects
// "chat" (a browser fails a handshake that offered subprotocols and got
// none back). A socket authenticated in the handshake counts as its
// user's from the start, so it gets in when anonymous sockets hold their
// whole share, where one that sends an auth frame after the upgrade would
// be refused as anonymous.
const (
	ChatProtocol  = "chat"
	TokenProtocol = "bearer."
)

// protocolToken is the token offered as a TokenProtocol subprotocol, or "".
func protocolToken(r *http.Request) string {
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if t, ok := strings.CutPrefix(strings.TrimSpace(p), TokenProtocol); ok {
				return t
			}
		}
	}
	return ""
}

func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// originCheck admits a handshake whose Origin is absent (not a browser),
// listed in CORS_ORIGIN (or CORS_ORIGIN is "*"), or this server's own
// origin (the embedded client, also behind a proxy that keeps Host).
type originCheck struct {
	any     bool
	origins map[string]bool
}

func newOriginCheck(origins []string) originCheck {
	oc := originCheck{origins: map[string]bool{}}
	for _, o := range origins {
		if o == "*" {
			oc.any = true
		}
		oc.origins[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	return oc
}

func (oc originCheck) allowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || oc.any || oc.origins[strings.ToLower(strings.TrimRight(origin, "/"))] {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}
