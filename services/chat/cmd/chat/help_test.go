package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// Every subcommand answers --help and -h with its help on stdout and exits 0 (the flag
// package's "flag: help requested" and exit 1 were what `chat token --help` gave).
func TestEverySubcommandHelpSucceeds(t *testing.T) {
	for _, sub := range []string{"serve", "healthcheck", "token", "help"} {
		for _, flag := range []string{"--help", "-h", "-help"} {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), []string{sub, flag}, envOf(nil), &stdout, &stderr); err != nil {
				t.Errorf("chat %s %s: %v", sub, flag, err)
				continue
			}
			if !strings.Contains(stdout.String(), "usage: chat") {
				t.Errorf("chat %s %s: no usage on stdout: %q", sub, flag, stdout.String())
			}
			if strings.Contains(stdout.String()+stderr.String(), "help requested") {
				t.Errorf("chat %s %s: the flag package's text: %q", sub, flag, stderr.String())
			}
		}
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"token", "--help"}, envOf(nil), &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--sub", "--name", "--ttl", "docker-compose exec -T chat /chat token"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("chat token --help lacks %q:\n%s", want, stdout.String())
		}
	}
	// The page is served at /, not /chat.
	stdout.Reset()
	if err := run(context.Background(), []string{"--help"}, envOf(nil), &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "the chat page (/)") || strings.Contains(stdout.String(), "(/chat)") {
		t.Errorf("chat --help names the page's path wrongly:\n%s", stdout.String())
	}
	// A wrong flag is still an error.
	if err := run(context.Background(), []string{"token", "--nope"}, envOf(nil), io.Discard, io.Discard); err == nil {
		t.Error("chat token --nope succeeded")
	}
}

// On a terminal the token is printed without a newline, so the terminal has no CR LF to
// add: what a reader of the terminal (docker-compose exec without -T, $(...) around it)
// gets is the token alone. Piped, it ends with a plain newline.
func TestTokenOnATerminalHasNoCarriageReturn(t *testing.T) {
	env := envOf(map[string]string{"CHAT_JWT_SECRET": testJWTSecret})
	var piped bytes.Buffer
	if err := run(context.Background(), []string{"token", "--sub", "alice"}, env, &piped, io.Discard); err != nil {
		t.Fatal(err)
	}
	if s := piped.String(); !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 || strings.Contains(s, "\r") {
		t.Fatalf("piped: %q, want the token and one newline", s)
	}

	master, slave := openPTY(t)
	if err := run(context.Background(), []string{"token", "--sub", "alice"}, env, slave, io.Discard); err != nil {
		t.Fatal(err)
	}
	// A mark written after the token shows where the token ended: whatever the terminal
	// made of a newline of the token's (CR LF) would stand between the two.
	if _, err := slave.WriteString("END\n"); err != nil {
		t.Fatal(err)
	}
	got := readUntil(t, master, "END")
	tok := strings.TrimSuffix(piped.String(), "\n")
	if !strings.HasPrefix(got, "eyJ") || strings.ContainsAny(got, "\r\n") {
		t.Fatalf("terminal: read %q before the line's end, want a token with no CR", got)
	}
	if len(got) != len(tok) {
		t.Fatalf("terminal: %d bytes, piped %d", len(got), len(tok))
	}
}

// openPTY opens a pseudo-terminal pair with the standard library only (Linux).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the pseudo-terminal is opened the Linux way (/dev/ptmx)")
	}
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("ptsname: %v", e)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// readUntil reads the master side up to mark and returns what came before it.
func readUntil(t *testing.T, master *os.File, mark string) string {
	t.Helper()
	var out []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(out, []byte(mark)) {
		n, err := master.Read(buf)
		if err != nil {
			t.Fatalf("read the terminal: %v (have %q)", err, out)
		}
		out = append(out, buf[:n]...)
	}
	return string(out[:bytes.Index(out, []byte(mark))])
}
