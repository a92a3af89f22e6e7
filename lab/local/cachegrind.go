package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Fixed cache geometry for Cachegrind, so different CPUs give the same
// numbers: 32 KiB 8-way L1 instruction and data caches, 8 MiB 16-way LL,
// 64-byte lines.
const (
	cacheI1 = "32768,8,64"
	cacheD1 = "32768,8,64"
	cacheLL = "8388608,16,64"
)

func cachegrindArgs(outDir string) []string {
	return []string{
		"valgrind", "--tool=cachegrind", "--cache-sim=yes", "-q",
		"--trace-children=yes",
		"--I1=" + cacheI1, "--D1=" + cacheD1, "--LL=" + cacheLL,
		"--cachegrind-out-file=" + filepath.Join(outDir, "cg.%p"),
	}
}

// cachegrindCounts are the summary events of one or more cachegrind runs.
type cachegrindCounts map[string]float64

// Cost is the estimated cycle count: L1 hits + 5·LL hits + 35·RAM hits.
func (c cachegrindCounts) Cost() float64 {
	ram := c["ILmr"] + c["DLmr"] + c["DLmw"]
	l1miss := c["I1mr"] + c["D1mr"] + c["D1mw"]
	llHits := l1miss - ram
	l1Hits := c["Ir"] + c["Dr"] + c["Dw"] - l1miss
	return l1Hits + 5*llHits + 35*ram
}

// readCachegrind sums the summaries of every cachegrind output file in dir
// (one per traced process) and returns the estimated cost.
func readCachegrind(dir string) (float64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "cg.*"))
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, fmt.Errorf("valgrind wrote no cachegrind output")
	}
	total := cachegrindCounts{}
	for _, f := range files {
		c, err := readCachegrindFile(f)
		if err != nil {
			return 0, err
		}
		for k, v := range c {
			total[k] += v
		}
	}
	for _, k := range []string{"Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw"} {
		if _, ok := total[k]; !ok {
			return 0, fmt.Errorf("cachegrind output lacks %s (was --cache-sim=yes honoured?)", k)
		}
	}
	return total.Cost(), nil
}

func readCachegrindFile(path string) (cachegrindCounts, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "events:"):
			events = strings.Fields(strings.TrimPrefix(line, "events:"))
		case strings.HasPrefix(line, "summary:"):
			vals := strings.Fields(strings.TrimPrefix(line, "summary:"))
			if len(vals) != len(events) {
				return nil, fmt.Errorf("%s: summary has %d values for %d events", filepath.Base(path), len(vals), len(events))
			}
			c := cachegrindCounts{}
			for i, v := range vals {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("%s: bad summary value %q", filepath.Base(path), v)
				}
				c[events[i]] = n
			}
			return c, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s: no summary line", filepath.Base(path))
}

// Cachegrind runs argv in dir under Cachegrind (the fixed cache geometry
// above, children traced) and returns its instructions (Ir) and the
// estimated cycle count (Cost), summed over every process it ran; stdout
// is the command's output.
func Cachegrind(ctx context.Context, dir string, argv []string) (instructions, cost float64, stdout []byte, err error) {
	tmp, err := os.MkdirTemp("", "perflab-cg-")
	if err != nil {
		return 0, 0, nil, err
	}
	defer os.RemoveAll(tmp)
	args := append(cachegrindArgs(tmp), argv...)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if stdout, err = cmd.Output(); err != nil {
		return 0, 0, stdout, fmt.Errorf("%s under cachegrind: %v: %s", filepath.Base(argv[0]), err, lastLines(strings.TrimSpace(errOut.String()), 3))
	}
	files, _ := filepath.Glob(filepath.Join(tmp, "cg.*"))
	total := cachegrindCounts{}
	for _, f := range files {
		c, err := readCachegrindFile(f)
		if err != nil {
			return 0, 0, stdout, err
		}
		for k, v := range c {
			total[k] += v
		}
	}
	if cost, err = readCachegrind(tmp); err != nil {
		return 0, 0, stdout, err
	}
	return total["Ir"], cost, stdout, nil
}
