package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestRunServesUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Addr:    "127.0.0.1:0",
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
			Started: func(a net.Addr) { addrc <- a },
		})
	}()
	addr := <-addrc
	resp, err := http.Get("http://" + addr.String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
}

func TestRunRefusesNonLoopbackAddresses(t *testing.T) {
	if err := Run(context.Background(), Options{Addr: "0.0.0.0:0", Handler: http.NotFoundHandler()}); err == nil {
		t.Fatal("0.0.0.0 accepted")
	}
}
