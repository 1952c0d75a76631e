package wsbuf

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
)

// A ping asked for in the middle of a frame goes out right after it, never inside
// it; one asked for between frames goes out at once. Whatever the split, the
// stream is the frames with the pings between them.
func TestPingNeverSplitsAFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		s := &sink{}
		fc := &Conn{Conn: s}
		var want bytes.Buffer
		for range 1 + rng.IntN(6) {
			h, p := frame(sizes[rng.IntN(len(sizes))], false)
			b := append(append([]byte{}, h...), p...)
			cut := rng.IntN(len(b) + 1) // ping asked for after cut bytes of the frame
			fc.Write(b[:cut])
			if err := fc.Ping(); err != nil {
				t.Fatal(err)
			}
			fc.Write(b[cut:])
			if cut == 0 && !fc.inFrame {
				want.Write(pingFrame) // between frames: at once, before this one
				want.Write(b)
			} else {
				want.Write(b)
				want.Write(pingFrame)
			}
		}
		if !bytes.Equal(s.buf.Bytes(), want.Bytes()) {
			t.Fatalf("round %d: pings and frames interleaved wrongly", round)
		}
	}
}

// Received counts what the peer sent through the connection's reads.
func TestReceivedCountsReads(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	fc := &Conn{Conn: a}
	go b.Write([]byte("hello"))
	buf := make([]byte, 16)
	n, err := fc.Read(buf)
	if err != nil || fc.Received() != uint64(n) || n == 0 {
		t.Fatalf("read %d (%v), Received %d", n, err, fc.Received())
	}
}

// pong is a client's pong frame (masked) with the payload given.
func pong(payload string) []byte {
	return append([]byte{0x8A, 0x80 | byte(len(payload)), 1, 2, 3, 4}, payload...)
}

func TestSkipPongs(t *testing.T) {
	text, _ := frame(3, true)
	text = append(text, "abc"...)
	for _, tc := range []struct {
		name     string
		in       []byte
		more     bool
		leftover int // bytes still buffered
	}{
		{"nothing", nil, false, 0},
		{"one pong", pong(""), false, 0},
		{"pongs with payloads", append(pong("12345678"), pong("x")...), false, 0},
		{"a pong, then a text frame", append(pong(""), text...), true, len(text)},
		{"a text frame first", append(append([]byte{}, text...), pong("")...), true, len(text) + 6},
		{"half a pong", pong("abcdef")[:5], true, 5},
		{"one byte", []byte{0x8A}, true, 1},
		{"a pong not masked (a protocol error, left to the library)", []byte{0x8A, 0}, true, 2},
		{"a fragmented control frame (FIN clear)", []byte{0x0A, 0x80, 1, 2, 3, 4}, true, 6},
		{"a ping", []byte{0x89, 0x80, 1, 2, 3, 4}, true, 6},
		{"a close", []byte{0x88, 0x80, 1, 2, 3, 4}, true, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(string(tc.in)), ReadSize)
			if len(tc.in) > 0 {
				br.Peek(len(tc.in))
			}
			if more := SkipPongs(br); more != tc.more || br.Buffered() != tc.leftover {
				t.Fatalf("SkipPongs = %v with %d left, want %v with %d", more, br.Buffered(), tc.more, tc.leftover)
			}
		})
	}
}
