// Command testsummary reads `go test -json` on stdin and prints what
// `go test` prints without -json — the output of failed tests, each
// package's closing ok/FAIL line, build errors — and then the slowest
// tests, with their package and seconds. test.sh pipes the suite through
// it:
//
//	go test -json ./... | go run ./internal/testsummary [-v] [-top 10]
//
// With -v it prints every test's output, as go test -v does. Lines that
// are not JSON are printed as they are. It exits 0 unless stdin cannot be
// read: go test's own exit status says whether the suite passed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	all := flag.Bool("v", false, "print the output of every test, not only of failed ones")
	top := flag.Int("top", 10, "how many of the slowest tests to list")
	flag.Parse()
	if err := summarize(os.Stdin, os.Stdout, *all, *top); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// timing is one finished top-level test.
type timing struct {
	pkg, test string
	seconds   float64
}

// summarize copies the text output of the events in r to w, keeping a
// top-level test's output (its subtests' included) until it ends and
// printing it only if it failed (or all is set), then lists the top
// slowest top-level tests.
func summarize(r io.Reader, w io.Writer, all bool, top int) error {
	held := map[[2]string][]string{} // package, top-level test → output lines
	var done []timing
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
			fmt.Fprintln(w, line)
			continue
		}
		if e.Test == "" {
			// Package output (its ok/FAIL line, a panic outside tests)
			// and build output; go test without -v drops the PASS line.
			if (e.Action == "output" && (all || e.Output != "PASS\n")) || e.Action == "build-output" {
				io.WriteString(w, e.Output)
			}
			continue
		}
		name, _, sub := strings.Cut(e.Test, "/")
		key := [2]string{e.Package, name}
		switch e.Action {
		case "output":
			if all || !isProgress(e.Output) {
				held[key] = append(held[key], e.Output)
			}
		case "pass", "fail", "skip":
			if sub {
				continue // the top-level test ends later and holds the lines
			}
			if e.Action == "fail" || all {
				io.WriteString(w, strings.Join(held[key], ""))
			}
			delete(held, key)
			if e.Action != "skip" {
				done = append(done, timing{e.Package, e.Test, e.Elapsed})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// Tests that never ended (the binary crashed or timed out): their
	// lines say what they were doing.
	for _, lines := range held {
		io.WriteString(w, strings.Join(lines, ""))
	}
	sort.SliceStable(done, func(i, j int) bool { return done[i].seconds > done[j].seconds })
	if len(done) > top {
		done = done[:top]
	}
	if len(done) > 0 {
		fmt.Fprintf(w, "\n%d slowest tests:\n", len(done))
		for _, d := range done {
			fmt.Fprintf(w, "%8.2fs  %s  %s\n", d.seconds, d.pkg, d.test)
		}
	}
	return nil
}

// isProgress reports whether a line is one of the progress lines go test
// prints only with -v (=== RUN, PAUSE, CONT, NAME, and --- PASS/SKIP),
// which -json always records.
func isProgress(s string) bool {
	t := strings.TrimLeft(s, " ")
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- SKIP"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}
