package wsbuf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// sink is the connection under a Conn in the unit tests: it keeps what
// reaches it.
type sink struct {
	net.Conn
	buf bytes.Buffer
}

func (s *sink) Write(p []byte) (int, error) { return s.buf.Write(p) }

// frame builds a WebSocket frame with a payload of n bytes, masked or not.
func frame(n int, masked bool) (header, payload []byte) {
	payload = make([]byte, n)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	header = []byte{0x81, 0}
	switch {
	case n < 126:
		header[1] = byte(n)
	case n <= 0xffff:
		header[1] = 126
		header = binary.BigEndian.AppendUint16(header, uint16(n))
	default:
		header[1] = 127
		header = binary.BigEndian.AppendUint64(header, uint64(n))
	}
	if masked {
		header[1] |= 0x80
		header = append(header, 1, 2, 3, 4)
	}
	return header, payload
}

var sizes = []int{0, 1, 2, 13, 14, 15, 16, 17, 31, 32, 33, 100, 125, 126, 127, 300, 4095, 4096, 65535, 65536, 70000}

// TestFrameConnWritesEachFrameOnce writes frames the way coder/websocket does
// (header, payload, flush, through a writeSize bufio.Writer) and checks that every
// frame reaches the connection intact in one write.
func TestFrameConnWritesEachFrameOnce(t *testing.T) {
	for _, masked := range []bool{false, true} {
		s := &sink{}
		fc := &Conn{Conn: s}
		bw := bufio.NewWriterSize(fc, writeSize)
		var want bytes.Buffer
		for i, n := range sizes {
			h, p := frame(n, masked)
			want.Write(h)
			want.Write(p)
			bw.Write(h)
			bw.Write(p)
			if err := bw.Flush(); err != nil {
				t.Fatal(err)
			}
			if fc.writes != i+1 {
				t.Fatalf("masked %v, payload %d: %d writes after %d frames", masked, n, fc.writes, i+1)
			}
		}
		if !bytes.Equal(s.buf.Bytes(), want.Bytes()) {
			t.Fatalf("masked %v: the bytes written differ from the frames", masked)
		}
	}
}

// TestFrameConnAnySplit feeds a stream of frames in random pieces: the bytes come
// out unchanged and in order, nothing is left held at the end, and no frame takes
// more writes than the pieces it came in.
func TestFrameConnAnySplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var stream bytes.Buffer
		frames := 1 + rng.IntN(8)
		for range frames {
			h, p := frame(sizes[rng.IntN(len(sizes))], rng.IntN(2) == 0)
			stream.Write(h)
			stream.Write(p)
		}
		s := &sink{}
		fc := &Conn{Conn: s}
		b := stream.Bytes()
		pieces := 0
		for len(b) > 0 {
			k := min(len(b), 1+rng.IntN(40))
			if rng.IntN(4) == 0 {
				k = len(b)
			}
			if n, err := fc.Write(b[:k]); n != k || err != nil {
				t.Fatalf("Write(%d) = %d, %v", k, n, err)
			}
			b = b[k:]
			pieces++
		}
		if !bytes.Equal(s.buf.Bytes(), stream.Bytes()) {
			t.Fatalf("round %d: bytes changed on the way", round)
		}
		if fc.n != 0 || fc.inFrame {
			t.Fatalf("round %d: %d bytes still held at the end of the last frame", round, fc.n)
		}
		if fc.writes > pieces+frames {
			t.Fatalf("round %d: %d writes for %d frames in %d pieces", round, fc.writes, frames, pieces)
		}
	}
}

// smallBuffers is what the chat handler gives websocket.Accept.
type smallBuffers struct{ http.ResponseWriter }

func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return Hijack(w.ResponseWriter.(http.Hijacker))
}

func echoServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(smallBuffers{w}, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(1 << 20)
		for {
			typ, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			if err := c.Write(context.Background(), typ, data); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHijackedConnectionEchoes runs coder/websocket on both ends over real TCP:
// messages of every size come back unchanged, and pings are answered.
func TestHijackedConnectionEchoes(t *testing.T) {
	srv := echoServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	for _, n := range sizes {
		_, p := frame(n, false)
		if err := c.Write(ctx, websocket.MessageBinary, p); err != nil {
			t.Fatal(err)
		}
		_, got, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("payload %d: %v", n, err)
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("payload %d came back as %d bytes", n, len(got))
		}
	}
	if err := c.Close(websocket.StatusNormalClosure, "done"); err != nil {
		t.Fatalf("close handshake: %v", err)
	}
}

// TestHijackKeepsBytesSentWithTheHandshake sends a frame in the same write as the
// handshake, so it is in net/http's reader when the connection is hijacked: it must
// not be lost with that reader.
func TestHijackKeepsBytesSentWithTheHandshake(t *testing.T) {
	srv := echoServer(t)
	nc, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	h, p := frame(5, true)
	copy(p, "hello")
	masked := make([]byte, len(p))
	key := h[len(h)-4:]
	for i := range p {
		masked[i] = p[i] ^ key[i%4]
	}
	req := "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := nc.Write(append(append([]byte(req), h...), masked...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	got := make([]byte, 7)
	if _, err := io.ReadFull(br, got); err != nil {
		t.Fatal(err)
	}
	if want := append([]byte{0x81, 5}, "hello"...); !bytes.Equal(got, want) {
		t.Fatalf("echo %q, want %q", got, want)
	}
}
