package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
)

// The manual (README.md and docs/*.md) is kept working by these tests:
// its relative links and anchors point somewhere, every command's help
// names a page that exists, and its sh examples run. An example that
// cannot run here (an adb phone, an SSH host, a file of your own, a run of
// minutes) is a code block marked by "<!-- illustrative -->" on the line
// before it (or "```sh illustrative").

const illustrative = "<!-- illustrative -->"

// manualFiles lists README.md and docs/*.md, relative to the repository root.
func manualFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md (err %v)", err)
	}
	return append([]string{"README.md"}, docs...)
}

// mdBlock is a fenced code block: its info string, whether it is marked
// illustrative, and its lines with their line numbers.
type mdBlock struct {
	info         string
	illustrative bool
	start        int // line number of the first line inside the block
	lines        []string
}

// mdParse splits a Markdown file into the lines outside fenced code
// blocks (others keeps them, blank inside blocks, so line numbers hold)
// and the blocks.
func mdParse(text string) (prose []string, blocks []mdBlock) {
	lines := strings.Split(text, "\n")
	var cur *mdBlock
	lastProse := ""
	for i, l := range lines {
		if fence := strings.HasPrefix(strings.TrimSpace(l), "```"); fence && cur == nil {
			info := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "```"))
			fields := strings.Fields(info)
			cur = &mdBlock{info: info, start: i + 2,
				illustrative: lastProse == illustrative || (len(fields) > 1 && fields[1] == "illustrative")}
			prose = append(prose, "")
			continue
		} else if fence {
			blocks = append(blocks, *cur)
			cur = nil
			prose = append(prose, "")
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, l)
			prose = append(prose, "")
			continue
		}
		prose = append(prose, l)
		if s := strings.TrimSpace(l); s != "" {
			lastProse = s
		}
	}
	return prose, blocks
}

// githubSlug is the anchor GitHub gives a heading: lower case, every
// character but letters, digits, '_', '-' and spaces dropped, spaces as '-'.
func githubSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

var (
	mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	mdLink    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	mdCode    = regexp.MustCompile("`[^`]*`")
)

// mdAnchors gives the anchors of a Markdown file's headings (a repeated
// heading gets -1, -2, … as on GitHub).
func mdAnchors(text string) map[string]bool {
	prose, _ := mdParse(text)
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose {
		m := mdHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		slug := githubSlug(m[1])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

func TestDocsLinks(t *testing.T) {
	files := manualFiles(t)
	linked := map[string]bool{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		prose, _ := mdParse(string(b))
		for i, l := range prose {
			for _, m := range mdLink.FindAllStringSubmatch(mdCode.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Join(filepath.Dir(file), path)
				}
				where := fmt.Sprintf("%s:%d: link %s", file, i+1, target)
				tb, err := os.ReadFile(resolved)
				if err != nil {
					if st, serr := os.Stat(resolved); serr == nil && st.IsDir() && anchor == "" {
						continue
					}
					t.Errorf("%s: %v", where, err)
					continue
				}
				linked[filepath.Clean(resolved)] = true
				if anchor != "" && !mdAnchors(string(tb))[anchor] {
					t.Errorf("%s: no heading of %s has the anchor #%s", where, resolved, anchor)
				}
			}
		}
	}
	// Every page of the manual can be reached from the README.
	for _, file := range files[1:] {
		if !linked[filepath.Clean(file)] {
			t.Errorf("%s: no page of the manual links to it", file)
		}
	}
}

// TestDocsHelpNamesAPage checks that every command's help (and perflab's
// own) names its page of the manual and that the page exists.
func TestDocsHelpNamesAPage(t *testing.T) {
	helps := [][]string{{"help"}, {"--device", "sim:pixel", "--help"}} // perflab, the workbench
	for _, c := range commands() {
		helps = append(helps, []string{"help", c.name})
	}
	pageRef := regexp.MustCompile(`docs/[\w.-]+\.md|README\.md`)
	for _, args := range helps {
		var out, errb bytes.Buffer
		dispatch(context.Background(), args, &out, &errb)
		text := out.String() + errb.String()
		var manual string
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "Manual: ") {
				manual = l
			}
		}
		pages := pageRef.FindAllString(manual, -1)
		if len(pages) == 0 {
			t.Errorf("perflab %s: no \"Manual: docs/PAGE.md\" line", strings.Join(args, " "))
		}
		for _, p := range pages {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("perflab %s: %v", strings.Join(args, " "), err)
			}
		}
	}
}

// shWords splits a shell command line into words as sh would for the
// simple lines of the manual: quotes, backslashes, and a comment from an
// unquoted '#' at the start of a word. It stops at the first operator
// (|, &, ;, <, >), returning the words before it.
func shWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			return words, nil
		case strings.IndexByte("|&;<>", c) >= 0:
			if c == '>' && inWord && (cur.String() == "2" || cur.String() == "1") {
				cur.Reset()
				inWord = false
			}
			flush()
			return words, nil
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				cur.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			if strings.ContainsAny(line[i:j], "$`") {
				return nil, fmt.Errorf("expansion in %q", line)
			}
			inWord = true
			i = j
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == '$' || c == '`' || c == '~' || c == '*' || c == '?':
			return nil, fmt.Errorf("needs a shell (%c) in %q", c, line)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

// docsQuick bounds an example's work so that the test stays fast: the
// flag that sets how much a command measures is set to a small value
// (added, or replacing the example's), and everything else runs as
// written.
var docsQuick = map[string][2]string{
	"run":      {"--trials", "3"},
	"validate": {"--aa", "4"},
	"order":    {"--runs", "2"},
	"check":    {"--duration", "1s"},
	"tune":     {"--duration", "1s"},
}

func quickArgs(args []string) []string {
	if len(args) == 0 {
		return args
	}
	q, ok := docsQuick[args[0]]
	if !ok {
		return args
	}
	if args[0] == "check" || args[0] == "tune" {
		// Only a check that asks for a duration of wall time is cut.
		has := false
		for _, a := range args {
			has = has || a == q[0] || strings.HasPrefix(a, q[0]+"=")
		}
		if !has {
			return args
		}
	}
	out := []string{args[0], q[0], q[1]}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if a == q[0] || a == "-"+strings.TrimPrefix(q[0], "--") {
			i++ // drop the example's value
			continue
		}
		if strings.HasPrefix(a, q[0]+"=") {
			continue
		}
		out = append(out, a)
	}
	return out
}

// docsExample is one runnable line of a sh block.
type docsExample struct {
	where string   // file:line
	args  []string // perflab's arguments
}

// docsExamples gives the manual's sh blocks that are not illustrative,
// each as its perflab lines in order (a block's lines share a directory:
// a later line may read what an earlier one wrote).
func docsExamples(t *testing.T) [][]docsExample {
	var all [][]docsExample
	for _, file := range manualFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, blocks := mdParse(string(b))
		for _, blk := range blocks {
			if f := strings.Fields(blk.info); len(f) == 0 || f[0] != "sh" || blk.illustrative {
				continue
			}
			var ex []docsExample
			for i, l := range blk.lines {
				l = strings.TrimSpace(l)
				var rest string
				switch {
				case strings.HasPrefix(l, "perflab "):
					rest = strings.TrimPrefix(l, "perflab ")
				case strings.HasPrefix(l, "go run . "):
					rest = strings.TrimPrefix(l, "go run . ")
				default:
					continue // another program, or a "$ " line shown with its output
				}
				where := fmt.Sprintf("%s:%d", file, blk.start+i)
				args, err := shWords(rest)
				if err != nil {
					t.Errorf("%s: %v (mark the block %s)", where, err, illustrative)
					continue
				}
				if len(args) == 0 {
					continue // the workbench, interactive
				}
				ex = append(ex, docsExample{where, args})
			}
			if len(ex) > 0 {
				all = append(all, ex)
			}
		}
	}
	return all
}

// TestDocsExamples runs every perflab line of the manual's sh blocks that
// are not illustrative, from a directory that sees the repository's files
// (examples/, README.md, …) and keeps what the examples write, and expects
// exit status 0 or 3 (a regression, an unstable check: an outcome).
func TestDocsExamples(t *testing.T) {
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	blocks := docsExamples(t)
	if len(blocks) < 5 {
		t.Fatalf("only %d runnable example blocks found", len(blocks))
	}
	for _, blk := range blocks {
		t.Run(strings.ReplaceAll(blk[0].where, "/", "_"), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, e := range entries {
				if e.Name() == ".git" {
					continue
				}
				if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
			env := append(os.Environ(),
				"XDG_DATA_HOME="+filepath.Join(dir, ".data"),
				"XDG_CONFIG_HOME="+filepath.Join(dir, ".config"),
				"XDG_STATE_HOME="+filepath.Join(dir, ".state"),
				"NO_COLOR=1")
			for _, ex := range blk {
				args := quickArgs(ex.args)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				cmd := exec.CommandContext(ctx, bin, args...)
				cmd.Dir, cmd.Env = dir, env
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				start := time.Now()
				err := cmd.Run()
				cancel()
				code := cmd.ProcessState.ExitCode()
				t.Logf("%s: perflab %s: exit %d in %.2fs", ex.where, strings.Join(args, " "), code, time.Since(start).Seconds())
				if code != 0 && code != 3 {
					t.Errorf("%s: perflab %s: exit %d (%v), want 0 or 3; output:\n%s",
						ex.where, strings.Join(args, " "), code, err, out.String())
				}
			}
		})
	}
}

func TestDocsHelpers(t *testing.T) {
	for heading, want := range map[string]string{
		"Sequential numbers and `stop: auto`":                    "sequential-numbers-and-stop-auto",
		"Is this setup trustworthy? `perflab validate`":          "is-this-setup-trustworthy-perflab-validate",
		"Devices, stability checks and governor tuning: `check`": "devices-stability-checks-and-governor-tuning-check",
		"adb: what uses gadb and why":                            "adb-what-uses-gadb-and-why",
	} {
		if got := githubSlug(heading); got != want {
			t.Errorf("githubSlug(%q) = %q, want %q", heading, got, want)
		}
	}
	for line, want := range map[string]string{
		`check sim:pixel#2   # is it stable?`:               "check|sim:pixel#2",
		`run -- 'gzip -1 -c f' "a b"`:                       "run|--|gzip -1 -c f|a b",
		`report s.jsonl --csv > trials.csv`:                 "report|s.jsonl|--csv",
		`check sim:nexus5 --json | tail -1`:                 "check|sim:nexus5|--json",
		`report s.jsonl --benchstat > s.txt && benchstat x`: "report|s.jsonl|--benchstat",
		`run x.json 2>/dev/null`:                            "run|x.json",
	} {
		words, err := shWords(line)
		if got := strings.Join(words, "|"); err != nil || got != want {
			t.Errorf("shWords(%q) = %q, %v; want %q", line, got, err, want)
		}
	}
	if _, err := shWords(`run "$HOME/x.json"`); err == nil {
		t.Errorf("shWords: an expansion needs a shell, want an error")
	}
	for in, want := range map[string]string{
		"run x.json --trials 50 --headless":  "run --trials 3 x.json --headless",
		"run --headless -- 'a --trials 9'":   "run --trials 3 --headless -- 'a --trials 9'",
		"check sim:pixel":                    "check sim:pixel",
		"check local --duration 30s":         "check --duration 1s local",
		"validate sim:pixel --aa=300 --json": "validate --aa 4 sim:pixel --json",
		"compare a b":                        "compare a b",
	} {
		if got := strings.Join(quickArgs(strings.Fields(in)), " "); got != want {
			t.Errorf("quickArgs(%s) = %s, want %s", in, got, want)
		}
	}
}
