package fanout

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apistack/platform/bench/internal/selfexec"
)

// SenderChildEnv, set in a process's environment, makes the fanout
// executable run as a sender child (SenderChildMain) instead of its usual
// command. Both cmd/fanout and this package's tests check it first.
const SenderChildEnv = "FANOUT_SENDER_CHILD"

// Why a child process: the generator reads every delivery of every subscriber
// (1,000 sockets, hundreds of thousands of frames a second at saturation). In
// one process the senders' goroutines wait behind those readers to be
// scheduled, so each acknowledged send took 70-230 ms in the generator while
// the server answered it in 5-7 ms (a send from another process, curl, got its
// answer in 1-17 ms during the same round): the generator, not the server, set
// how many sends a second were accepted. In a process of its own the sender
// gets its share of the CPU from the OS scheduler.

// childJob is what the parent hands its sender child on stdin.
type childJob struct {
	Config Config `json:"config"`
	RunID  string `json:"run_id"`
	Total  int64  `json:"total"`
}

// measureInChild runs measure in a child process and calls ack for each
// acknowledged send it reports, once the child has finished.
func (s *sender) measureInChild(ctx context.Context, total int64, ack func(n int64, took time.Duration)) (time.Time, int64, error) {
	job, err := json.Marshal(childJob{Config: s.run.cfg, RunID: s.run.id, Total: total})
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("sender process: encode job: %w", err)
	}
	child, err := selfexec.Start(ctx, SenderChildEnv)
	if err != nil {
		return time.Time{}, 0, err
	}
	// The child reads its whole job before it reports: written first, then
	// stdin closed.
	_, werr := child.Stdin.Write(job)
	child.Stdin.Close()
	end, issued, done, perr := readChild(child.Stdout, ack, s.errs.addN)
	_, _ = io.Copy(io.Discard, child.Stdout)
	if err := child.Cmd.Wait(); err != nil {
		return time.Time{}, 0, fmt.Errorf("sender process: %w", err)
	}
	if werr != nil {
		return time.Time{}, 0, fmt.Errorf("sender process: send job: %w", werr)
	}
	if perr != nil {
		return time.Time{}, 0, fmt.Errorf("sender process: %w", perr)
	}
	if !done {
		return time.Time{}, 0, errors.New("sender process: ended without its final line")
	}
	return end, issued, nil
}

// readChild parses the child's report: "a SEQ NANOS" per acknowledged send,
// "e COUNT KIND" per kind of failed send, and "d ISSUED END_UNIX_NANOS" last.
func readChild(r io.Reader, ack func(int64, time.Duration), fail func(string, int64)) (end time.Time, issued int64, done bool, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		tag, rest, _ := strings.Cut(sc.Text(), " ")
		a, b, _ := strings.Cut(rest, " ")
		x, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return end, issued, done, fmt.Errorf("bad line %q", sc.Text())
		}
		switch tag {
		case "a":
			ns, err := strconv.ParseInt(b, 10, 64)
			if err != nil {
				return end, issued, done, fmt.Errorf("bad line %q", sc.Text())
			}
			ack(x, time.Duration(ns))
		case "e":
			fail(b, x)
		case "d":
			ns, err := strconv.ParseInt(b, 10, 64)
			if err != nil {
				return end, issued, done, fmt.Errorf("bad line %q", sc.Text())
			}
			end, issued, done = time.Unix(0, ns), x, true
		default:
			return end, issued, done, fmt.Errorf("bad line %q", sc.Text())
		}
	}
	return end, issued, done, sc.Err()
}

// SenderChildMain runs a sender child: it reads its job from stdin, sends, and
// reports on stdout. It returns the process's exit code.
func SenderChildMain() int {
	if err := serveSender(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fanout sender:", err)
		return 1
	}
	return 0
}

func serveSender(ctx context.Context, in io.Reader, out io.Writer) error {
	var job childJob
	if err := json.NewDecoder(io.LimitReader(in, 1<<20)).Decode(&job); err != nil {
		return fmt.Errorf("read job: %w", err)
	}
	if err := job.Config.fill(); err != nil { // the same bounds as in the parent
		return err
	}
	if job.Total < 0 || job.Total > MaxMessages {
		return fmt.Errorf("total %d outside 0..%d", job.Total, MaxMessages)
	}
	client := newSendClient(job.Config)
	defer client.CloseIdleConnections()
	s := &sender{run: &run{cfg: job.Config, id: job.RunID}, client: client}
	// The report is buffered: about 20 bytes per acknowledged send, one
	// write to the pipe per 3,000 or so.
	var mu sync.Mutex
	w := bufio.NewWriterSize(out, 1<<16)
	var line []byte
	end, issued := s.measure(ctx, job.Total, func(n int64, took time.Duration) {
		mu.Lock()
		line = append(line[:0], 'a', ' ')
		line = strconv.AppendInt(line, n, 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(took), 10)
		line = append(line, '\n')
		_, _ = w.Write(line)
		mu.Unlock()
	})
	errs := s.errs.snapshot()
	for _, kind := range Kinds(errs) {
		fmt.Fprintf(w, "e %d %s\n", errs[kind], kind)
	}
	fmt.Fprintf(w, "d %d %d\n", issued, end.UnixNano())
	return w.Flush()
}
