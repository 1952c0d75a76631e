// Package wsfloor is the floor the chat fan-out is measured against: a bare
// coder/websocket broadcast server, no storage, one frame per message per subscriber.
package wsfloor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	chatclient "github.com/apistack/platform/services/chat/client"
)

// Options tune the server; zero values take the defaults of coder/websocket's chat example.
type Options struct {
	Buffer       int           // queued frames per subscriber before dropping (16)
	WriteTimeout time.Duration // per frame (5s)
	Logger       *slog.Logger
}

// Server broadcasts each sent message to every subscriber of its channel. Each
// subscriber has a goroutine writing from a buffered channel; when that buffer is
// full the message is dropped for that subscriber and counted.
type Server struct {
	opts Options

	mu       sync.Mutex
	channels map[string]map[*subscriber]struct{}
	nextID   int64

	published   atomic.Uint64
	queued      atomic.Uint64
	dropped     atomic.Uint64
	subscribers atomic.Int64
}

type subscriber struct {
	frames chan []byte
}

// New returns a server with opts filled in.
func New(opts Options) *Server {
	if opts.Buffer <= 0 {
		opts.Buffer = 16
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, channels: map[string]map[*subscriber]struct{}{}}
}

// Handler serves the chat-compatible subset: GET /api/v1/ws, POST /api/v1/messages/send
// and GET /stats.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+chatclient.WSPath, s.subscribe)
	mux.HandleFunc("POST "+chatclient.SendPath, s.send)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Stats())
	})
	return mux
}

// Stats counts what the server did since start.
type Stats struct {
	Subscribers int64  `json:"subscribers"`
	Published   uint64 `json:"published"`
	Queued      uint64 `json:"queued"`
	Dropped     uint64 `json:"dropped"`
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	return Stats{
		Subscribers: s.subscribers.Load(),
		Published:   s.published.Load(),
		Queued:      s.queued.Load(),
		Dropped:     s.dropped.Load(),
	}
}

func (s *Server) add(channel string, sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.channels[channel]
	if set == nil {
		set = map[*subscriber]struct{}{}
		s.channels[channel] = set
	}
	set[sub] = struct{}{}
	s.subscribers.Add(1)
}

func (s *Server) remove(channel string, sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.channels[channel], sub)
	if len(s.channels[channel]) == 0 {
		delete(s.channels, channel)
	}
	s.subscribers.Add(-1)
}

func (s *Server) subscribe(w http.ResponseWriter, r *http.Request) {
	channel := r.URL.Query().Get("channel")
	if channel == "" {
		http.Error(w, "channel is required", http.StatusBadRequest)
		return
	}
	// Registered before the handshake completes, so a client that has its 101 is
	// already subscribed; anything sent meanwhile waits in the buffer.
	sub := &subscriber{frames: make(chan []byte, s.opts.Buffer)}
	s.add(channel, sub)
	defer s.remove(channel, sub)

	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		s.opts.Logger.Debug("websocket accept", "err", err)
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	for {
		select {
		case frame := <-sub.frames:
			if err := s.write(ctx, c, frame); err != nil {
				s.opts.Logger.Debug("websocket write", "channel", channel, "err", err)
				return
			}
		case <-ctx.Done():
			c.Close(websocket.StatusGoingAway, "")
			return
		}
	}
}

func (s *Server) write(ctx context.Context, c *websocket.Conn, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, frame)
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	var body chatclient.SendBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8192)).Decode(&body); err != nil {
		http.Error(w, fmt.Sprintf("decode body: %v", err), http.StatusBadRequest)
		return
	}
	if body.Message == "" || body.Channel == "" {
		http.Error(w, "message and channel are required", http.StatusBadRequest)
		return
	}
	msg, err := s.broadcast(body)
	if err != nil {
		s.opts.Logger.Error("broadcast", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(msg)
}

// broadcast numbers the message, encodes it once and queues the frame for every
// subscriber of its channel, dropping it for those whose buffer is full rather than
// letting one slow reader hold up the rest. Numbering and queueing happen under one
// lock so that every subscriber sees the channel in id order.
func (s *Server) broadcast(body chatclient.SendBody) (chatclient.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	msg := chatclient.Message{
		ID:        s.nextID,
		Channel:   body.Channel,
		Text:      body.Message,
		User:      chatclient.User{ID: "floor", Name: "floor", Role: "viewer"},
		CreatedAt: time.Now().UTC(),
	}
	frame, err := chatclient.EncodeMessageEvent(msg)
	if err != nil {
		return msg, err
	}
	s.published.Add(1)
	for sub := range s.channels[body.Channel] {
		select {
		case sub.frames <- frame:
			s.queued.Add(1)
		default:
			s.dropped.Add(1)
		}
	}
	return msg, nil
}
