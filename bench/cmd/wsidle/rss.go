package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// readRSS returns the VmRSS of process pid in bytes.
func readRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	n, err := parseVmRSS(f)
	if err != nil {
		return 0, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	return n, nil
}

// parseVmRSS finds the "VmRSS:   1234 kB" line of a /proc/PID/status file.
func parseVmRSS(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("odd VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse VmRSS %q: %w", fields[0], err)
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no VmRSS line")
}
