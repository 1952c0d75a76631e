// Package selfexec starts a copy of the running executable as a worker
// process (fanout's sender, wsidle's holders): the one way a bench driver
// starts a process. The copy learns its role from one environment
// variable, takes its work on stdin and reports on stdout; its stderr is
// the parent's.
package selfexec

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Child is a running copy of this executable.
type Child struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser // closing it tells the child its input has ended
	Stdout io.ReadCloser  // read to its end before Wait
}

// Start runs this executable again with role=1 added to the environment
// (the child's main checks Is(role) first). The child is killed when ctx
// ends.
func Start(ctx context.Context, role string) (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%s process: %w", role, err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), role+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s process: %w", role, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s process: %w", role, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s process: start %s: %w", role, exe, err)
	}
	return &Child{Cmd: cmd, Stdin: in, Stdout: out}, nil
}

// Is reports whether this process is a copy started for role.
func Is(role string) bool { return os.Getenv(role) != "" }
