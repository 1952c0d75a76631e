package soak

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/apistack/platform/bench/internal/netguard"
	chatclient "github.com/apistack/platform/services/chat/client"
)

// subscriber is one socket that reads its channel, reconnecting with since= the
// last cursor it saw whenever it is dropped, and checks that the message ids it
// sees follow one another (ids increase by one per message in a channel).
type subscriber struct {
	r       *runner
	channel string
	client  *http.Client

	mu   sync.Mutex
	conn *websocket.Conn // the open socket, for drop

	// Only the subscriber's goroutine touches these.
	cursor string // last event cursor seen, for since=
	lastID int64  // last message id seen, 0 when unknown
}

// errDropped ends a session that drop closed on purpose.
var errDropped = errors.New("dropped by the churn")

func (s *subscriber) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := s.session(ctx)
		if ctx.Err() != nil || errors.Is(err, errDropped) {
			continue
		}
		s.r.fail("subscriber: " + netguard.ErrorKind(err))
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// drop closes the socket with a normal close, as a client leaving a page does;
// its session then reconnects with since.
func (s *subscriber) drop() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		go c.Close(websocket.StatusNormalClosure, "soak churn")
	}
}

func (s *subscriber) session(ctx context.Context) error {
	since := s.cursor
	u, err := wsURL(s.r.cfg.Base, s.channel, since)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	c, _, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: s.client})
	cancel()
	if err != nil {
		return err
	}
	c.SetReadLimit(1 << 20)
	s.mu.Lock()
	s.conn = c
	s.mu.Unlock()
	s.r.open.Add(1)
	defer s.r.open.Add(-1)
	defer c.CloseNow()
	if since != "" {
		s.r.reconnects.Add(1)
	}
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			s.mu.Lock()
			dropped := s.conn != c
			s.mu.Unlock()
			if dropped || websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				return errDropped
			}
			return err
		}
		if err := chatclient.ParseFrame(data, func(ev chatclient.Event) { s.event(ev, since != "") }); err != nil {
			s.r.fail("subscriber: undecodable event")
		}
	}
}

// event reads one server object.
func (s *subscriber) event(ev chatclient.Event, resumed bool) {
	switch ev.Type {
	case chatclient.TypeHello:
		last := string(ev.LastID)
		switch {
		case !resumed:
			s.cursor, s.lastID = last, messageID(last)
		case ev.Recovered:
			s.r.recovered.Add(1)
		default:
			// The server could not replay from the cursor: start over from
			// what it says is current, as a client reloading would.
			s.r.notRecovered.Add(1)
			s.cursor, s.lastID = last, messageID(last)
		}
		return
	case chatclient.TypeError:
		s.r.fail("subscriber: error event")
		return
	}
	if ev.Cursor != "" {
		s.cursor = string(ev.Cursor)
	}
	if ev.Type != chatclient.TypeMessage {
		return
	}
	id := ev.Message.ID
	if id <= 0 {
		s.r.fail("subscriber: message without id")
		return
	}
	s.r.delivered.Add(1)
	switch {
	case s.lastID == 0:
	case id <= s.lastID:
		s.r.duplicated.Add(1)
	case id > s.lastID+1:
		s.r.lost.Add(id - s.lastID - 1)
	}
	s.lastID = max(s.lastID, id)
}

// messageID is the message part of a cursor ("42" and "42-1" are after message
// 42), or 0 when the cursor has another shape: then continuity is checked from the
// next message on.
func messageID(cursor string) int64 {
	head, _, _ := strings.Cut(cursor, "-")
	n, err := strconv.ParseInt(head, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// wsURL is the subscription URL; since is passed on as the server wrote it.
func wsURL(base, channel, since string) (string, error) {
	return chatclient.WSURL(base, channel, chatclient.Cursor(since))
}
