package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perflab/perflab/internal/elfsym"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// cBuilds compiles testdata/cwork/work.c: dir/full/work with its
// symbols, dir/stripped/work stripped with its debug file beside it
// (objcopy --only-keep-debug, --add-gnu-debuglink), and dir/bare/work
// stripped with no debug file. It skips without a C compiler or binutils.
func cBuilds(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"cc", "objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: no C binary to profile", tool)
		}
	}
	dir := t.TempDir()
	src, _ := filepath.Abs("testdata/cwork/work.c")
	for _, d := range []string{"full", "stripped", "bare"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	run := func(argv ...string) {
		t.Helper()
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	full := filepath.Join(dir, "full", "work")
	run("cc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", full, src)
	s := filepath.Join(dir, "stripped")
	run("objcopy", "--only-keep-debug", full, filepath.Join(s, "work.debug"))
	run("strip", "--strip-all", "-o", filepath.Join(s, "work"), full)
	run("objcopy", "--add-gnu-debuglink="+filepath.Join(s, "work.debug"), filepath.Join(s, "work"))
	run("strip", "--strip-all", "-o", filepath.Join(dir, "bare", "work"), full)
	return dir
}

// perfRecords records argv with perf record as a trial does and reads
// it back with res; it skips when perf cannot record here.
func perfRecords(t *testing.T, res *elfsym.Resolver, argv ...string) *lab.Profile {
	t.Helper()
	var st perfRecordStatus
	if ok, why := st.check(); !ok {
		t.Skip(why)
	}
	data := filepath.Join(t.TempDir(), "perf.data")
	if out, err := exec.Command("perf", perfRecordArgs(data, argv...)...).CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	p, err := readPerfData(data, res)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// leafShare is the share of p's samples whose leaf is fn.
func leafShare(p *lab.Profile, fn string) float64 {
	n := 0
	for _, s := range p.Samples {
		if s.Stack[0] == fn {
			n++
		}
	}
	return float64(n) / float64(len(p.Samples))
}

// TestStrippedBinarySymbols profiles a real C program under perf record:
// built with symbols, perf names hot_loop; stripped with its debug file
// beside it (perf does not read a .gnu_debuglink outside its own cache),
// perflab names it from the debug file; stripped without one, frames are
// work+0xADDR, never bare addresses, and every frame of the binary keeps
// its mapping with the binary's path and build ID, so pprof can symbolize
// it later.
func TestStrippedBinarySymbols(t *testing.T) {
	dir := cBuilds(t)
	for _, tc := range []struct{ build, hot string }{{"full", "hot_loop"}, {"stripped", "hot_loop"}, {"bare", ""}} {
		t.Run(tc.build, func(t *testing.T) {
			bin := filepath.Join(dir, tc.build, "work")
			p := perfRecords(t, &elfsym.Resolver{}, bin, "60", "5")
			if len(p.Samples) < 20 {
				t.Fatalf("%d samples", len(p.Samples))
			}
			id := ""
			for _, m := range p.Mappings {
				if m.File == bin {
					id = m.BuildID
				}
			}
			if len(id) < 16 {
				t.Fatalf("no mapping with a build ID for %s: %+v", bin, p.Mappings)
			}
			bare := 0
			for _, s := range p.Samples {
				for i, name := range s.Stack {
					if strings.HasPrefix(name, "0x") {
						bare++
					}
					if strings.HasPrefix(name, "work+0x") && p.Mappings[s.Frames[i].Mapping-1].File != bin {
						t.Errorf("%s: mapping %+v", name, p.Mappings[s.Frames[i].Mapping-1])
					}
				}
			}
			if bare > 0 {
				t.Errorf("%d bare addresses", bare)
			}
			if tc.hot != "" {
				if sh := leafShare(p, tc.hot); sh < 0.5 {
					t.Errorf("hot_loop holds %.0f%% of the leaves, want most", 100*sh)
				}
				return
			}
			groups := map[string]int{}
			for _, s := range p.Samples {
				groups[elfsym.Group(s.Stack[0])]++
			}
			if groups["work (unsymbolized)"] < len(p.Samples)/2 {
				t.Errorf("leaves by group %v", groups)
			}
			// In pprof's form the binary's locations keep address and
			// mapping, which is marked as not symbolized.
			pp := sessions.ToPprof(p, nil)
			i := slices.IndexFunc(pp.Mapping, func(m *profile.Mapping) bool { return m.File == bin })
			if i < 0 || pp.Mapping[i].HasFunctions || pp.Mapping[i].BuildID != id || pp.Mapping[i].Start == 0 || pp.Mapping[i].Limit <= pp.Mapping[i].Start {
				t.Fatalf("pprof mappings %v", pp.Mapping)
			}
			for _, l := range pp.Location {
				if l.Mapping == pp.Mapping[i] && (l.Address < l.Mapping.Start || l.Address >= l.Mapping.Limit) {
					t.Errorf("location %#x outside its mapping", l.Address)
				}
			}
			// Later, with the build tree at hand (perflab profile
			// --symbols DIR): the same build's unstripped copy names them.
			if n := sessions.Symbolize(pp, &elfsym.Resolver{Symbols: filepath.Join(dir, "full")}); n == 0 || !pp.Mapping[i].HasFunctions {
				t.Fatalf("named %d locations; mapping %+v", n, pp.Mapping[i])
			}
			var hot, all int64
			for _, s := range pp.Sample {
				all += s.Value[0]
				if sessions.FuncName(s.Location[0]) == "hot_loop" {
					hot += s.Value[0]
				}
			}
			if hot < all/2 {
				t.Errorf("hot_loop is the leaf of %d of %d samples after --symbols", hot, all)
			}
		})
	}
}

// TestDebugFileByBuildID: a stripped binary without a .gnu_debuglink is
// named from the debug file its build ID points to under the debug root
// (/usr/lib/debug/.build-id/xx/yyyy.debug, where Debian's -dbgsym
// packages put them).
func TestDebugFileByBuildID(t *testing.T) {
	dir := cBuilds(t)
	bin := filepath.Join(dir, "bare", "work")
	id := elfsym.FileBuildID(bin)
	if len(id) < 4 {
		t.Fatalf("build ID %q", id)
	}
	root := t.TempDir()
	dst := filepath.Join(root, ".build-id", id[:2], id[2:]+".debug")
	os.MkdirAll(filepath.Dir(dst), 0o755)
	data, err := os.ReadFile(filepath.Join(dir, "stripped", "work.debug"))
	if err != nil || os.WriteFile(dst, data, 0o644) != nil {
		t.Fatal(err)
	}
	defer func(old string) { elfsym.DebugRoot = old }(elfsym.DebugRoot)
	elfsym.DebugRoot = root
	p := perfRecords(t, &elfsym.Resolver{}, bin, "60", "5")
	if sh := leafShare(p, "hot_loop"); sh < 0.5 {
		t.Errorf("hot_loop holds %.0f%% of the leaves, want most", 100*sh)
	}
}
