package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

func tableCmd(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: faults table REPORT.jsonl")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	var vs []verdict
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var v verdict
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		vs = append(vs, v)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	writeTable(os.Stdout, vs)
	return nil
}

// writeTable renders verdicts as the Markdown table of docs/faults.md.
func writeTable(w io.Writer, vs []verdict) {
	fmt.Fprintln(w, "| fault | sends acked / tries | lost | stored twice | outcome_unknown 503s | subscribers reconnected (times) | missed | repeated | recovered:false | fault lasted | first 201 after | every replica 201 after | longest without a 201 | verdict |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
	for _, v := range vs {
		verdict := "ok"
		if len(v.Failed) > 0 {
			verdict = "**FAIL**: " + strings.Join(v.Failed, ", ")
		}
		fmt.Fprintf(w, "| %s | %d / %d | %d | %d | %d | %d (%d) | %d | %d | %d | %.1f s | %s | %s | %.1f s | %s |\n",
			v.Fault, v.Acked, v.Attempts, v.Lost, v.Duplicates, v.UnknownOutcome,
			v.Reconnected, v.Reconnects, v.Missed, v.Repeated, v.NotRecovered,
			v.FaultSeconds, seconds(v.RecoverySeconds), seconds(v.AllSeconds), v.LongestNoAck, verdict)
	}
	fmt.Fprintln(w)
	for _, v := range vs {
		fmt.Fprintf(w, "- `%s`: `%s`\n", v.Fault, v.Command)
	}
}

func seconds(s float64) string {
	if s < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", s)
}
