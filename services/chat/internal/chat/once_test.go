package chat_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/redisstore"
)

// testIdempotentSend: a send repeated with its idempotency key stores
// nothing and answers the first result (message and bot reply), whatever
// changed since; the key is the sender's and the channel's, and a key
// sent with another message is refused.
func testIdempotentSend(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	v, mod := en.users[chat.RoleViewer], en.users[chat.RoleModerator]
	must[chat.Command](t)(en.svc.CreateCommand(en.ctx, mod, chat.CommandInput{Command: "hi", Response: "hello ${user}", CooldownSeconds: ptr(0)}))
	send := func(u chat.User, channel, text, key string) (chat.SendResult, error) {
		return en.svc.Send(en.ctx, chat.Held(u), chat.SendInput{Channel: channel, Message: text, IdempotencyKey: key})
	}
	first, err := send(v, "", "!hi there", "k-1")
	if err != nil || first.Replayed || first.Reply == nil {
		t.Fatalf("first send = %+v, %v", first, err)
	}
	// Whatever changed since, the repeat answers as the first did.
	must[chat.Member](t)(en.svc.Timeout(en.ctx, mod, v.ID, chat.TimeoutInput{Seconds: 60}))
	again, err := send(v, "", "!hi there", "k-1")
	if err != nil || !again.Replayed || again.Message != first.Message || again.Reply == nil || *again.Reply != *first.Reply {
		t.Fatalf("repeat = %+v, %v; want the first result %+v replayed", again, err, first)
	}
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{}))
	if len(ms) != 2 {
		t.Fatalf("%d messages stored, want the message and its reply once: %+v", len(ms), ms)
	}
	// The same key with another message is a client's mistake.
	_, err = send(v, "", "something else", "k-1")
	if de := wantKind(t, err, chat.KindUnprocessable); de.Reason != chat.ReasonKeyReused {
		t.Fatalf("reason %q", de.Reason)
	}
	// Another user, or another channel, has keys of its own.
	s := en.users[chat.RoleSubscriber]
	other, err := send(s, "", "!hi there", "k-1")
	if err != nil || other.Replayed || other.Message.ID == first.Message.ID {
		t.Fatalf("another user's send under the same key = %+v, %v", other, err)
	}
	elsewhere, err := send(mod, "elsewhere", "plain", "k-2")
	if err != nil || elsewhere.Replayed {
		t.Fatal(elsewhere, err)
	}
	if r, err := send(mod, "", "plain", "k-2"); err != nil || r.Replayed {
		t.Fatalf("a key of another channel replayed: %+v, %v", r, err)
	}
	// Keys are bounded and plain.
	for _, bad := range []string{strings.Repeat("k", chat.MaxIdempotencyKeyLen+1), "has space", "ключ", "a/b"} {
		_, err := send(mod, "", "x", bad)
		if de := wantKind(t, err, chat.KindInvalid); de.Fields[0].Field != "idempotency_key" {
			t.Fatalf("key %q: %+v", bad, de)
		}
	}
	// Without a key every send is a new message.
	a, b := en.send(mod, "same"), en.send(mod, "same")
	if a.Message.ID == b.Message.ID {
		t.Fatal("two sends without a key stored one message")
	}
}

// testOnceRecordRace: two copies of one send that both read "no record"
// (they raced) store one message: the record is checked in the same step
// as the append, and the loser is told to ask again.
func testOnceRecordRace(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	once := chat.Once{Key: "u1:race", Part: chat.OnceMessage, Fingerprint: "f", For: time.Minute}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = en.store.AppendMessage(en.ctx, chat.Message{Channel: "general", Text: "once", CreatedAt: en.clock.Now()}, once)
		}()
	}
	wg.Wait()
	stored := 0
	for _, err := range errs {
		switch {
		case err == nil:
			stored++
		case chat.KindOf(err) == chat.KindConflict:
			if de, _ := chat.AsError(err); de.Reason != chat.ReasonKeyInUse {
				t.Fatalf("conflict reason %q", de.Reason)
			}
		default:
			t.Fatal(err)
		}
	}
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{}))
	if stored != 1 || len(ms) != 1 {
		t.Fatalf("%d appends succeeded, %d messages stored; want 1 and 1", stored, len(ms))
	}
	st := en.store.ReadForSend(en.ctx, chat.SendReads{Once: chat.OnceRef{Channel: "general", Key: once.Key}})
	if st.OnceErr != nil || !st.Once.Found() || st.Once.Message.ID != ms[0].ID || st.Once.Fingerprint != "f" {
		t.Fatalf("record = %+v, %v", st.Once, st.OnceErr)
	}
}

// TestStalledSendIsStoredOnce: Redis stops reading right when a send's
// append reaches it, longer than the send may wait. The sender is told the
// outcome is unknown (not "nothing was changed"), the append runs once
// when Redis resumes (the client sends a write once), and the send
// repeated with its key answers that message without storing another.
func TestStalledSendIsStoredOnce(t *testing.T) {
	srv := redistest.Start(t)
	// The append the client gave up on stays in Redis's socket buffer and
	// runs when Redis resumes, as it would behind a proxy or on a path
	// that did not pass the client's close on.
	proxy := redistest.StartProxy(t, srv.Addr(), 10*time.Second)
	ctx := context.Background()
	st, err := redisstore.Open(ctx, proxy.URL(), redisstore.Options{Prefix: "stall:"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stall := &stallAppend{srv: srv}
	st.Client().AddHook(stall)
	svc := chat.NewService(st, chat.Options{PublicRead: true})
	admin, err := svc.Bootstrap(ctx, "admin-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	// Load the scripts (a stalled EVALSHA of an unknown script would
	// only answer NOSCRIPT when it runs) and claim the channel.
	if _, err := svc.Send(ctx, chat.Fresh(admin), chat.SendInput{Message: "warm up"}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"retry-me", ""} {
		stall.arm()
		sendCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = svc.Send(sendCtx, chat.Fresh(admin), chat.SendInput{Message: "once, key " + key + ".", IdempotencyKey: key})
		cancel()
		de := wantKind(t, err, chat.KindUnavailable)
		if de.Reason != chat.ReasonOutcomeUnknown {
			t.Fatalf("key %q: stalled send answered %+v, want reason %s", key, de, chat.ReasonOutcomeUnknown)
		}
		stall.wait()
		stored := func() []chat.Message {
			ms, err := svc.Messages(ctx, nil, "", chat.Page{})
			if err != nil {
				t.Fatal(err)
			}
			var out []chat.Message
			for _, m := range ms {
				if m.Text == "once, key "+key+"." {
					out = append(out, m)
				}
			}
			return out
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(stored()) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if key != "" {
			res, err := svc.Send(ctx, chat.Fresh(admin), chat.SendInput{Message: "once, key " + key + ".", IdempotencyKey: key})
			if err != nil || !res.Replayed {
				t.Fatalf("the repeat = %+v, %v; want the stalled send's message replayed", res, err)
			}
		}
		if got := stored(); len(got) != 1 {
			t.Fatalf("key %q: stored %d times, want once", key, len(got))
		}
	}
}

// isAppend recognises the append script by its first key, the channel's
// message counter.
func isAppend(cmd redis.Cmder) bool {
	args := cmd.Args()
	if (cmd.Name() != "evalsha" && cmd.Name() != "eval") || len(args) < 4 {
		return false
	}
	key, _ := args[3].(string)
	return strings.HasSuffix(key, "}:seq")
}

// stallAppend pauses Redis (SIGSTOP) when the next append goes out, and
// resumes it a second later.
type stallAppend struct {
	srv     *redistest.Server
	mu      sync.Mutex
	armed   bool
	resumed chan struct{}
}

func (s *stallAppend) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.resumed = true, make(chan struct{})
}

func (s *stallAppend) wait() { <-s.resumed }

func (s *stallAppend) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *stallAppend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (s *stallAppend) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.mu.Lock()
		fire := s.armed && isAppend(cmd)
		if fire {
			s.armed = false
			s.srv.Pause()
			resumed := s.resumed
			go func() {
				time.Sleep(time.Second)
				s.srv.Resume()
				close(resumed)
			}()
		}
		s.mu.Unlock()
		err := next(ctx, cmd)
		if fire && err == nil {
			return errors.New("stallAppend: the stalled call answered in time")
		}
		return err
	}
}
