package readwait_test

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/readwait"
)

const wait = 5 * time.Second

// pair is a TCP connection over loopback: the server's side, which is parked, and
// the client's, which writes or closes.
func pair(t testing.TB) (server *net.TCPConn, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); s.Close() })
	return s.(*net.TCPConn), client
}

func raw(t testing.TB, c syscall.Conn) syscall.RawConn {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func newPoller(t testing.TB) (*readwait.Poller[int], chan int) {
	t.Helper()
	woke := make(chan int, 100)
	p, err := readwait.New(func(v int) { woke <- v })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, woke
}

func expect(t *testing.T, woke chan int, want int) {
	t.Helper()
	select {
	case got := <-woke:
		if got != want {
			t.Fatalf("woke %d, want %d", got, want)
		}
	case <-time.After(wait):
		t.Fatalf("%d not woken", want)
	}
}

func quiet(t *testing.T, woke chan int) {
	t.Helper()
	select {
	case got := <-woke:
		t.Fatalf("%d woken with nothing to read", got)
	case <-time.After(200 * time.Millisecond):
	}
}

// Of several parked sockets, only the one whose peer writes wakes, once; parked
// again, it wakes again on the next bytes.
func TestWakesTheSocketWithBytes(t *testing.T) {
	p, woke := newPoller(t)
	var servers []*net.TCPConn
	var clients []net.Conn
	for i := range 5 {
		s, c := pair(t)
		servers, clients = append(servers, s), append(clients, c)
		if err := p.Wait(raw(t, s), uint64(i+1), i+1); err != nil {
			t.Fatal(err)
		}
	}
	quiet(t, woke)
	if p.Parked() != 5 {
		t.Fatalf("%d parked, want 5", p.Parked())
	}
	clients[2].Write([]byte("x"))
	expect(t, woke, 3)
	quiet(t, woke) // one-shot: the unread byte does not wake it again
	buf := make([]byte, 1)
	servers[2].Read(buf)
	if err := p.Wait(raw(t, servers[2]), 3, 3); err != nil {
		t.Fatal(err)
	}
	quiet(t, woke)
	clients[2].Write([]byte("y"))
	expect(t, woke, 3)
	if p.Parked() != 4 {
		t.Fatalf("%d parked, want 4", p.Parked())
	}
}

// Bytes that came before the socket was parked wake it at once.
func TestWakesAtOnceWhenBytesWait(t *testing.T) {
	p, woke := newPoller(t)
	s, c := pair(t)
	c.Write([]byte("x"))
	time.Sleep(50 * time.Millisecond)
	if err := p.Wait(raw(t, s), 1, 1); err != nil {
		t.Fatal(err)
	}
	expect(t, woke, 1)
}

// A peer that hangs up wakes its socket (the read then sees the end).
func TestWakesOnHangUp(t *testing.T) {
	p, woke := newPoller(t)
	s, c := pair(t)
	if err := p.Wait(raw(t, s), 7, 7); err != nil {
		t.Fatal(err)
	}
	c.Close()
	expect(t, woke, 7)
}

// Kick takes a parked socket out and runs the handler; a key not parked is left
// alone, and the socket's later bytes do not wake it a second time.
func TestKick(t *testing.T) {
	p, woke := newPoller(t)
	s, c := pair(t)
	if err := p.Wait(raw(t, s), 9, 9); err != nil {
		t.Fatal(err)
	}
	if !p.Kick(9) {
		t.Fatal("Kick found nothing parked")
	}
	expect(t, woke, 9)
	if p.Kick(9) {
		t.Fatal("a second Kick found it parked")
	}
	c.Write([]byte("x"))
	quiet(t, woke)
}

// A closed socket cannot be parked: Wait says so and keeps nothing.
func TestWaitOnAClosedSocket(t *testing.T) {
	p, woke := newPoller(t)
	s, _ := pair(t)
	rc := raw(t, s)
	s.Close()
	if err := p.Wait(rc, 1, 1); err == nil {
		t.Fatal("Wait parked a closed socket")
	}
	if p.Parked() != 0 {
		t.Fatalf("%d parked", p.Parked())
	}
	quiet(t, woke)
}

// Close runs the handler of every socket still parked, and parks no more.
func TestCloseWakesWhatIsParked(t *testing.T) {
	woke := make(chan int, 10)
	p, err := readwait.New(func(v int) { woke <- v })
	if err != nil {
		t.Fatal(err)
	}
	s1, _ := pair(t)
	s2, _ := pair(t)
	p.Wait(raw(t, s1), 1, 1)
	p.Wait(raw(t, s2), 2, 2)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{}
	for range 2 {
		select {
		case v := <-woke:
			got[v] = true
		case <-time.After(wait):
			t.Fatal("Close left a parked socket")
		}
	}
	if !got[1] || !got[2] {
		t.Fatalf("woken %v", got)
	}
	if err := p.Wait(raw(t, s1), 1, 1); err == nil {
		t.Fatal("a closed poller parked a socket")
	}
}

// BenchmarkWake is a parked socket's round: the peer writes a byte, the poller
// wakes the handler, which reads it and parks the socket again.
func BenchmarkWake(b *testing.B) {
	done := make(chan struct{}, 1)
	p, err := readwait.New(func(int) { done <- struct{}{} })
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	s, c := pair(b)
	rc := raw(b, s)
	buf := make([]byte, 1)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Wait(rc, 1, 1); err != nil {
			b.Fatal(err)
		}
		c.Write(buf)
		<-done
		s.Read(buf)
	}
}

// Pending tells what the socket holds without reading it.
func TestPending(t *testing.T) {
	s, c := pair(t)
	rc := raw(t, s)
	if n, err := readwait.Pending(rc); n != 0 || err != nil {
		t.Fatalf("Pending on a quiet socket = %d, %v", n, err)
	}
	c.Write([]byte("hello"))
	deadline := time.Now().Add(wait)
	n, err := readwait.Pending(rc)
	for n == 0 && err == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		n, err = readwait.Pending(rc)
	}
	if n != 5 || err != nil {
		t.Fatalf("Pending = %d, %v; want 5", n, err)
	}
}
