// Package wsbuf gives an upgraded WebSocket connection small buffers in place of the
// 4 KB reader and 4 KB writer net/http hands over on a hijack, so an idle socket holds
// a few hundred bytes of buffer instead of 8 KB while each frame still leaves in one
// system call.
package wsbuf

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
)

// ReadSize is the read buffer of an upgraded connection. A client sends little
// (pongs, a send now and then): frame headers are read through it, and a payload
// longer than it is read straight into the message's buffer.
const ReadSize = 128

// writeSize is the bufio.Writer's buffer: a frame header and the start of a small
// payload. Conn holds what it flushes until the frame is complete.
const writeSize = 16

// holdSize bounds what Conn holds of an incomplete frame: a header (at most 14
// bytes) and more than one flush of the writer's buffer.
const holdSize = 32

// Hijack takes the connection over from h (an http.ResponseWriter) and returns it
// with a ReadSize reader and a writer whose frames Conn writes whole; the
// buffers net/http used for the request are left to the garbage collector. Bytes the
// client sent after its handshake, already in net/http's reader, are kept in the
// new reader's buffer, where websocket.Accept looks for them.
func Hijack(h http.Hijacker) (*Conn, *bufio.ReadWriter, error) {
	nc, brw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if brw.Writer.Buffered() > 0 {
		if err := brw.Writer.Flush(); err != nil {
			nc.Close()
			return nil, nil, err
		}
	}
	fc := &Conn{Conn: nc}
	pending := brw.Reader.Buffered()
	if pending == 0 {
		return fc, bufio.NewReadWriter(bufio.NewReaderSize(fc, ReadSize), bufio.NewWriterSize(fc, writeSize)), nil
	}
	b, _ := brw.Reader.Peek(pending)
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(b)), fc), max(ReadSize, pending))
	if _, err := br.Peek(pending); err != nil { // reads only the copied bytes
		nc.Close()
		return nil, nil, err
	}
	return fc, bufio.NewReadWriter(br, bufio.NewWriterSize(fc, writeSize)), nil
}

// Conn writes each WebSocket frame in one system call although the
// bufio.Writer in front of it has only writeSize bytes: for a frame longer than
// that, the writer flushes its buffer (the header and the start of the payload) and
// then writes the rest of the payload straight through. Conn follows the
// frames' headers, holds the bytes of an incomplete frame (up to holdSize) and
// writes them with the rest in one writev once the frame is complete. Reads pass
// through.
type Conn struct {
	net.Conn

	held    [holdSize]byte // the current frame's bytes not yet written
	n       int            // bytes in held
	hdrGot  int            // header bytes seen of the current frame
	hdrNeed int            // header bytes still to come; 0 once the header is complete
	left    int64          // payload bytes of the current frame still to come
	inFrame bool           // a header has started and its frame is not complete
	iov     [2][]byte      // backing of bufs, so a writev allocates nothing
	bufs    net.Buffers
	writes  int // calls that reached the connection: one per frame, which the tests check

	mu       sync.Mutex    // Write and Ping
	pingDue  bool          // a ping waits for the current frame to complete
	received atomic.Uint64 // bytes read from the peer
}

// pingFrame is a server's ping: FIN, opcode 9, no mask, no payload.
var pingFrame = []byte{0x89, 0x00}

// Read passes through, counting what the peer sent (Received).
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.received.Add(uint64(n))
	}
	return n, err
}

// SyscallConn is the socket's, for a readiness poller: a plain TCP connection has
// one, a TLS one not (its buffered records would hide from the poller).
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errNoSyscallConn
}

var errNoSyscallConn = errors.New("wsbuf: the connection has no socket of its own")

// Received counts the bytes read from the peer so far: a pong, or anything else
// the peer sent after a ping, shows that it is alive, whoever read it.
func (c *Conn) Received() uint64 { return c.received.Load() }

// Ping writes a ping frame between two frames of the connection's writer (the
// WebSocket library's), or right after the frame being written. It does not wait
// for the pong: the caller watches Received, and the pong itself is read (and
// dropped) by whoever reads next, SkipPongs or the library.
func (c *Conn) Ping() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFrame {
		c.pingDue = true
		return nil
	}
	_, err := c.Conn.Write(pingFrame)
	return err
}

func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := len(p)
	for len(p) > 0 {
		if !c.inFrame {
			c.inFrame, c.hdrGot, c.hdrNeed = true, 0, 2
		}
		if c.hdrNeed > 0 {
			k := min(c.hdrNeed, len(p))
			copy(c.held[c.n:], p[:k])
			c.n += k
			c.hdrGot += k
			c.hdrNeed -= k
			p = p[k:]
			if c.hdrNeed > 0 {
				continue
			}
			h := c.held[c.n-c.hdrGot : c.n]
			if c.hdrGot == 2 { // the first two bytes say how long the header is
				switch h[1] & 0x7f {
				case 126:
					c.hdrNeed = 2
				case 127:
					c.hdrNeed = 8
				}
				if h[1]&0x80 != 0 { // masked (a client's frame)
					c.hdrNeed += 4
				}
				if c.hdrNeed > 0 {
					continue
				}
			}
			c.left = payloadLen(h)
			if c.left == 0 {
				if err := c.flush(nil); err != nil {
					return total - len(p), err
				}
			}
			continue
		}
		k := int(min(int64(len(p)), c.left))
		chunk := p[:k]
		p = p[k:]
		c.left -= int64(k)
		if c.left > 0 && c.n+k <= holdSize {
			c.n += copy(c.held[c.n:], chunk)
			continue
		}
		if err := c.flush(chunk); err != nil {
			return total - len(p) - k, err
		}
	}
	return total, nil
}

// flush writes what is held and then chunk in one system call; the frame is
// complete unless payload bytes are still to come.
func (c *Conn) flush(chunk []byte) error {
	var err error
	switch {
	case c.n == 0:
		_, err = c.Conn.Write(chunk)
	case len(chunk) == 0:
		_, err = c.Conn.Write(c.held[:c.n])
	default:
		c.iov = [2][]byte{c.held[:c.n], chunk}
		c.bufs = c.iov[:]
		_, err = c.bufs.WriteTo(c.Conn)
		c.iov, c.bufs = [2][]byte{}, nil // keep no reference to the caller's bytes
	}
	c.n = 0
	c.writes++
	if c.left == 0 {
		c.inFrame = false
		if c.pingDue && err == nil {
			c.pingDue = false
			_, err = c.Conn.Write(pingFrame)
		}
	}
	return err
}

// SkipPongs drops the pong frames at the head of what br holds, up to the first
// other frame or an incomplete one, and reports whether br still holds bytes. A
// WebSocket library's read handles a pong and then waits for the next data frame
// inside its own (deep) stack; skipping the pongs a parked connection wakes up for
// lets it park again without a goroutine. It reads nothing from the connection, and
// must only be called between two messages (no frame partly read).
func SkipPongs(br *bufio.Reader) (more bool) {
	for {
		n := br.Buffered()
		if n < 2 {
			return n > 0
		}
		h, _ := br.Peek(2)
		// FIN, no RSV bits, opcode 0xA; masked (a client's), payload <= 125.
		if h[0] != 0x8A || h[1]&0x80 == 0 || h[1]&0x7f > 125 {
			return true
		}
		size := 2 + 4 + int(h[1]&0x7f)
		if n < size {
			return true
		}
		_, _ = br.Discard(size)
	}
}

// payloadLen reads the payload length of a complete frame header.
func payloadLen(h []byte) int64 {
	switch l := h[1] & 0x7f; l {
	case 126:
		return int64(h[2])<<8 | int64(h[3])
	case 127:
		var n int64
		for _, b := range h[2:10] {
			n = n<<8 | int64(b)
		}
		return n
	default:
		return int64(l)
	}
}
