package selfexec

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

const echoRole = "SELFEXEC_TEST_ECHO"

// TestMain makes the test binary the child too: a copy started for
// echoRole upper-cases its stdin to stdout.
func TestMain(m *testing.M) {
	if Is(echoRole) {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			os.Exit(1)
		}
		fmt.Print(strings.ToUpper(string(b)))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestChildTakesStdinAndAnswersOnStdout(t *testing.T) {
	if Is(echoRole) {
		t.Fatal("the parent must not have the role")
	}
	c, err := Start(context.Background(), echoRole)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c.Stdin, "a job\n"); err != nil {
		t.Fatal(err)
	}
	c.Stdin.Close()
	line, err := bufio.NewReader(c.Stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if line != "A JOB\n" {
		t.Fatalf("child answered %q", line)
	}
}
