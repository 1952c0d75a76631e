package sendhook_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/testkit"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/memory"
	"github.com/apistack/platform/services/chat/internal/sendhook"
	"github.com/apistack/platform/services/chat/internal/webhooks"
	"github.com/apistack/platform/services/chat/internal/webhooks/webhookstest"
)

// service is a chat service whose send hook is hook's receiver.
func service(t *testing.T, rcv *webhookstest.Receiver, timeout time.Duration, failOpen bool) (*chat.Service, chat.User, string) {
	t.Helper()
	secret, err := webhooks.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	hook, err := sendhook.New(rcv.URL, secret, timeout)
	if err != nil {
		t.Fatal(err)
	}
	svc := chat.NewService(memory.New(100), chat.Options{Logger: testkit.Logger(), SendHook: hook, SendHookFailOpen: failOpen})
	admin, err := svc.Bootstrap(context.Background(), "sendhook-test-admin-token-01")
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := svc.CreateUser(context.Background(), admin, chat.CreateUserInput{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateFilter(context.Background(), admin, chat.FilterInput{Kind: chat.FilterBlockedTerm, Pattern: "scam"}); err != nil {
		t.Fatal(err)
	}
	return svc, u, secret
}

func send(svc *chat.Service, u chat.User, text string) (chat.SendResult, error) {
	return svc.Send(context.Background(), chat.Fresh(u), chat.SendInput{Channel: "general", Message: text})
}

// TestVerdicts: allow stores the text, deny refuses with a 403 naming the
// hook and its reason (cleaned), replace stores the replacement, which
// filters judge as if it had been sent; every request is signed.
func TestVerdicts(t *testing.T) {
	rcv := webhookstest.NewReceiver(t)
	answers := map[string]string{
		"hello":  `{"action":"allow"}`,
		"nope":   `{"action":"deny","reason":"paywalled\u202e channel"}`,
		"darn":   `{"action":"replace","text":"d*rn"}`,
		"sneaky": `{"action":"replace","text":"a scam link"}`,
		"empty":  `{"action":"replace","text":"   "}`,
		"weird":  `{"action":"maybe"}`,
	}
	rcv.Answer(func(r webhookstest.Request) (int, string) {
		for k, v := range answers {
			if bytes.Contains(r.Body, []byte(`"text":"`+k+`"`)) {
				return http.StatusOK, v
			}
		}
		return http.StatusOK, `{"action":"allow"}`
	})
	svc, u, secret := service(t, rcv, 2*time.Second, false)
	if r, err := send(svc, u, "hello"); err != nil || r.Message.Text != "hello" {
		t.Errorf("allow: %+v %v", r.Message, err)
	}
	_, err := send(svc, u, "nope")
	if e, ok := chat.AsError(err); !ok || e.Kind != chat.KindForbidden || e.Reason != chat.ReasonSendHook || e.Message != "the platform refused this message: paywalled channel" {
		t.Errorf("deny: %v", err)
	}
	if r, err := send(svc, u, "darn"); err != nil || r.Message.Text != "d*rn" {
		t.Errorf("replace: %+v %v", r.Message, err)
	}
	if _, err := send(svc, u, "sneaky"); chat.KindOf(err) != chat.KindBlocked {
		t.Errorf("a replacement a filter blocks: %v, want blocked", err)
	}
	if _, err := send(svc, u, "empty"); chat.KindOf(err) != chat.KindUnprocessable {
		t.Errorf("an invalid replacement: %v, want unprocessable", err)
	}
	if _, err := send(svc, u, "weird"); chat.KindOf(err) != chat.KindUnavailable {
		t.Errorf("an unknown action (fail closed): %v, want unavailable", err)
	}
	reqs := rcv.Requests()
	if len(reqs) != len(answers) {
		t.Errorf("%d hook requests, want %d", len(reqs), len(answers))
	}
	webhookstest.Verify(t, secret, reqs)
}

// TestHookThatDoesNotAnswer: past the timeout (or on a 5xx) a send is
// refused with 503 when the hook fails closed, and stored as sent when it
// fails open.
func TestHookThatDoesNotAnswer(t *testing.T) {
	rcv := webhookstest.NewReceiver(t)
	rcv.Answer(func(r webhookstest.Request) (int, string) {
		if bytes.Contains(r.Body, []byte("slow")) {
			time.Sleep(300 * time.Millisecond)
			return http.StatusOK, `{"action":"deny"}`
		}
		return http.StatusBadGateway, ""
	})
	closed, u, _ := service(t, rcv, 50*time.Millisecond, false)
	for _, text := range []string{"slow one", "broken one"} {
		_, err := send(closed, u, text)
		if e, ok := chat.AsError(err); !ok || e.Kind != chat.KindUnavailable || e.Reason != chat.ReasonSendHook {
			t.Errorf("fail closed, %q: %v, want unavailable send_hook", text, err)
		}
	}
	open, u2, _ := service(t, rcv, 50*time.Millisecond, true)
	for _, text := range []string{"slow two", "broken two"} {
		if r, err := send(open, u2, text); err != nil || r.Message.Text != text {
			t.Errorf("fail open, %q: %+v %v, want stored", text, r.Message, err)
		}
	}
}
