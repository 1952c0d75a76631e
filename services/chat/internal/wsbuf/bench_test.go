package wsbuf

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
)

// BenchmarkFrameWrite writes server frames over loopback TCP the way
// coder/websocket does (header, payload, flush): through net/http's 4 KB
// bufio.Writer, and through this package's 16-byte one over a Conn.
func BenchmarkFrameWrite(b *testing.B) {
	for _, n := range []int{300, 8000} {
		for _, kind := range []string{"bufio4k", "wsbuf"} {
			b.Run(fmt.Sprintf("%s/%dB", kind, n), func(b *testing.B) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				defer ln.Close()
				go func() {
					c, err := ln.Accept()
					if err == nil {
						io.Copy(io.Discard, c)
						c.Close()
					}
				}()
				nc, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				var bw *bufio.Writer
				if kind == "wsbuf" {
					bw = bufio.NewWriterSize(&Conn{Conn: nc}, writeSize)
				} else {
					bw = bufio.NewWriterSize(nc, 4096)
				}
				h, p := frame(n, false)
				b.SetBytes(int64(len(h) + len(p)))
				b.ReportAllocs()
				for b.Loop() {
					bw.Write(h)
					bw.Write(p)
					if err := bw.Flush(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
