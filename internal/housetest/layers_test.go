package housetest

import (
	"sort"
	"strings"
	"testing"
)

// floors are perflab's layers, lowest first (docs/architecture.md). A
// package is on the floor of the longest prefix that names it; it may
// import perflab packages on its own floor or below, never above. Go
// forbids cycles, so within a floor imports already run one way.
var floors = []struct {
	name     string
	prefixes []string
}{
	{"analysis", []string{"analysis"}},
	{"helpers", []string{"internal", "format", "examples"}},
	{"lab", []string{"lab"}},
	{"sessions", []string{"sessions", "internal/gensession"}},
	{"tui", []string{"tui"}},
	{"cli", []string{"cli"}},
	{"commands", []string{"", "bench"}},
}

// floorOf returns the floor index of pkg (a path from the module root;
// "" is the root package, main.go), -1 when no floor names it.
func floorOf(pkg string) int {
	best, bestLen := -1, -1
	for i, fl := range floors {
		for _, p := range fl.prefixes {
			if (pkg == p || p != "" && strings.HasPrefix(pkg, p+"/")) && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best
}

// charmOnlyInTUI reports whether an import path is one of the Charm
// libraries that draw screens (Bubble Tea, Bubbles, Lip Gloss and their
// helpers), which only tui may import. charmbracelet/x/term only asks
// whether a file is a terminal, and the commands may use it.
func charmOnlyInTUI(imp string) bool {
	if imp == "github.com/charmbracelet/x/term" {
		return false
	}
	return strings.HasPrefix(imp, "charm.land/") || strings.HasPrefix(imp, "github.com/charmbracelet/")
}

// ioPackages are the standard packages that do I/O, which analysis (pure
// statistics on numbers) never imports.
var ioPackages = map[string]bool{"os": true, "os/exec": true, "io": true, "io/fs": true, "bufio": true, "net": true, "net/http": true, "syscall": true}

// TestLayers enforces the floors on every non-test file (tests may reach
// up a floor to check what a package's output becomes): no perflab import
// from a higher floor, the Charm libraries only in tui, no I/O in analysis.
func TestLayers(t *testing.T) {
	var problems []string
	for _, f := range moduleFiles(t) {
		from := floorOf(f.pkg)
		if from < 0 {
			problems = append(problems, f.rel+": in no floor; add its directory to floors and docs/architecture.md")
			continue
		}
		if f.test {
			continue
		}
		for _, imp := range f.imports() {
			switch {
			case imp == modulePath || strings.HasPrefix(imp, modulePath+"/"):
				to := strings.TrimPrefix(strings.TrimPrefix(imp, modulePath), "/")
				if floorOf(to) > from {
					problems = append(problems, f.rel+" ("+floors[from].name+") imports "+to+" ("+floors[floorOf(to)].name+"), a floor above")
				}
			case charmOnlyInTUI(imp) && floors[from].name != "tui":
				problems = append(problems, f.rel+" imports "+imp+": only tui draws screens")
			case ioPackages[imp] && floors[from].name == "analysis":
				problems = append(problems, f.rel+" imports "+imp+": analysis does no I/O")
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestFloorOf pins the floor of a few packages, the rule's edge cases.
func TestFloorOf(t *testing.T) {
	check := func(pkg, want string) {
		t.Helper()
		i := floorOf(pkg)
		if i < 0 || floors[i].name != want {
			t.Errorf("floorOf(%q) = %d, want floor %s", pkg, i, want)
		}
	}
	check("analysis", "analysis")
	check("analysis/parse", "analysis")
	check("format", "helpers")
	check("internal/proctest", "helpers")
	check("internal/gensession", "sessions")
	check("lab", "lab")
	check("lab/simdevice/shell", "lab")
	check("sessions/engine", "sessions")
	check("tui", "tui")
	check("cli", "cli")
	check("", "commands")
	check("bench/gensession", "commands")
	if i := floorOf("labx"); i != -1 {
		t.Errorf("floorOf(\"labx\") = %d, want -1: a new top-level directory needs its own entry", i)
	}
}
