package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	chatclient "github.com/apistack/platform/services/chat/client"
)

// subscriber is one live client of a channel, as the browser client behaves: it reads
// until its socket drops, then reconnects (to the next replica, with backoff) with
// since=<the last cursor it received>, for as long as the test runs.
type subscriber struct {
	api     *api
	channel string
	replica int

	mu           sync.Mutex
	got          []message
	connects     int
	notRecovered int      // hellos that answered since= with recovered:false
	drops        []string // why each socket ended, in order
	dialErrors   int
	lastDialErr  string
	ready        chan struct{} // closed at the first hello
	readyOnce    sync.Once
}

func newSubscriber(a *api, channel string, replica int) *subscriber {
	return &subscriber{api: a, channel: channel, replica: replica, ready: make(chan struct{})}
}

// run reads until ctx ends, through the chat's Go client: it reconnects (to the next
// replica, as a client behind a load balancer lands on any) with since=<the last cursor
// received>, after a wait with jitter that doubles from 0.25 s to 2 s while sockets fail
// or end right away (1013 while Redis is out), so an outage does not become a busy
// loop; a socket that lived 2 s resets it.
func (s *subscriber) run(ctx context.Context) {
	bases := make([]string, len(s.api.replicas))
	for i := range bases {
		bases[i] = s.api.replicas[(s.replica+i)%len(s.api.replicas)].String()
	}
	c := s.api.client(s.replica, "")
	c.Token = "" // reading is anonymous
	sub := c.Subscribe(ctx, s.channel, chatclient.SubscribeOptions{
		Bases:   bases,
		Backoff: chatclient.Backoff{Min: 250 * time.Millisecond, Max: 2 * time.Second},
		Healthy: 2 * time.Second,
		OnEvent: s.event,
		OnDrop:  s.dropped,
	})
	<-sub.Done()
}

// event records one server object.
func (s *subscriber) event(ev chatclient.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case ev.Type == chatclient.TypeHello:
		if s.connects > 0 && !ev.Recovered {
			s.notRecovered++
		}
		s.connects++
		s.readyOnce.Do(func() { close(s.ready) })
	case ev.Type == chatclient.TypeMessage && ev.Message != nil:
		s.got = append(s.got, *ev.Message)
	}
}

// dropped records why a socket ended, or why one could not be opened (the client does
// not call it once ctx has ended).
func (s *subscriber) dropped(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var de *chatclient.DialError
	switch {
	case errors.As(err, &de):
		s.dialErrors++
		s.lastDialErr = err.Error()
	case chatclient.CloseCode(err) != -1:
		s.drops = append(s.drops, fmt.Sprintf("close %d", chatclient.CloseCode(err)))
	default:
		s.drops = append(s.drops, "dropped")
	}
}

// lastID is the id of the last message received (0: none).
func (s *subscriber) lastID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		return 0
	}
	return s.got[len(s.got)-1].ID
}

// report is what the subscriber saw, for the verdict.
func (s *subscriber) report() subscriberReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return subscriberReport{
		channel:      s.channel,
		got:          append([]message(nil), s.got...),
		reconnects:   max(s.connects-1, 0),
		notRecovered: s.notRecovered,
		drops:        append([]string(nil), s.drops...),
		dialErrors:   s.dialErrors,
		lastDialErr:  s.lastDialErr,
	}
}
