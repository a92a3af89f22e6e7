package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/perflab/perflab/lab"
)

// Load reads the session file at path. Unreadable event lines (corrupt,
// truncated by a crash) are skipped and listed in Problems with their line
// numbers, and so are lines the integrity checks reject (see Read). An
// unreadable header, a second session header (sessions concatenated) and
// two different trials with the same index are errors naming the lines.
func Load(path string) (*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, release, err := mapFile(f)
	if err != nil {
		return nil, err
	}
	s, err := parseMapped(data, release)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

// Read reads a session from r; see Load. Besides the JSON of each line it
// checks what a session's trials must satisfy, and never counts a trial it
// cannot trust:
//   - a trial's arm is control or treatment and its status ok, failed or
//     timeout; another value skips the trial with a problem naming it;
//   - trial indices increase; a line repeating an earlier trial exactly is
//     a problem ("duplicate … counted once") and is dropped, a different
//     trial with an earlier trial's index is an error naming both lines, and
//     an index below an earlier one that is not a duplicate is a problem
//     (the trial is kept);
//   - a metric keeps its unit: a value in another unit than the metric's
//     first one is left out of the trial (never pooled) with a problem;
//   - a second session header is an error: `cat a.jsonl b.jsonl` does not
//     make one session.
func Read(r io.Reader) (*Session, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return parse(data, true, false)
}

func readAll(f *os.File) ([]byte, func(), error) {
	data, err := io.ReadAll(f)
	return data, func() {}, err
}

// parseMapped parses a mapped file and unmaps it. Should the file shrink
// meanwhile (it was overwritten), reading a page past its new end is an
// error, not a crash.
func parseMapped(data []byte, release func()) (s *Session, err error) {
	defer release()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverFault(&err)
	return parse(data, true, true)
}

// errFileChanged is the error of a mapped session that shrank while read.
var errFileChanged = errors.New("the file shrank while it was read (overwritten?); read it again")

// recoverFault turns a memory fault (reading a page of a mapped file past
// its end) into errFileChanged; other panics go on.
func recoverFault(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if _, fault := r.(interface{ Addr() uintptr }); fault {
		*err = errFileChanged
		return
	}
	panic(r)
}

// parse splits data into lines, decodes the events in parallel chunks and
// checks the trials' integrity. fast false decodes every line with
// encoding/json (the reference the fast decoder is tested against).
// guard says data is a mapped file (see parseMapped).
func parse(data []byte, fast, guard bool) (*Session, error) {
	if len(data) == 0 {
		return nil, errors.New("empty file, not a perflab session")
	}
	first, rest, _ := bytes.Cut(data, []byte{'\n'})
	s := &Session{}
	if err := readHeader(bytes.TrimSpace(first), &s.Header); err != nil {
		return nil, fmt.Errorf("line 1: %w", err)
	}
	// Workers take disjoint byte ranges that start at a line: each first
	// counts its lines, so that all can then decode straight into their
	// place in events. No serial pass splits the file.
	workers := min(runtime.GOMAXPROCS(0), 1+len(rest)/(1<<20))
	starts := make([]int, workers+1)
	for w := 1; w < workers; w++ {
		i := max(w*len(rest)/workers, starts[w-1])
		if k := bytes.IndexByte(rest[i:], '\n'); k >= 0 && i > 0 && rest[i-1] != '\n' {
			i += k + 1
		} else if k < 0 {
			i = len(rest)
		}
		starts[w] = i
	}
	starts[workers] = len(rest)
	arms := s.Header.Plan.ArmKeys()
	counts := make([]int, workers+1) // lines before each range, after counting
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seg := rest[starts[w]:starts[w+1]]
			n := bytes.Count(seg, []byte{'\n'})
			if len(seg) > 0 && seg[len(seg)-1] != '\n' {
				n++
			}
			counts[w+1] = n
		}()
	}
	wg.Wait()
	for w := range workers {
		counts[w+1] += counts[w]
	}
	nLines := counts[workers]
	events := make([]lab.Event, nLines)
	keep := make([]bool, nLines)
	problems := make([][]LineError, workers)
	fatal := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if guard {
				defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
				defer recoverFault(&fatal[w])
			}
			var in interner
			seg := rest[starts[w]:starts[w+1]]
			for k := counts[w]; len(seg) > 0; k++ {
				var line []byte
				if i := bytes.IndexByte(seg, '\n'); i >= 0 {
					line, seg = seg[:i+1], seg[i+1:]
				} else {
					line, seg = seg, nil
				}
				e, prob, ok := decodeLine(line, k+2, &in, fast, arms)
				switch {
				case prob != nil && prob.fatal:
					fatal[w] = errors.New(prob.String())
					return
				case prob != nil:
					problems[w] = append(problems[w], prob.LineError)
				case ok:
					events[k], keep[k] = e, true
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range fatal {
		if err != nil {
			return nil, err // the first one: workers hold ranges in order
		}
	}
	n := 0
	lineOf := make([]int32, 0, nLines)
	for k := range events {
		if keep[k] {
			if n != k {
				events[n] = events[k]
			}
			lineOf = append(lineOf, int32(k+2))
			n++
		}
	}
	clear(events[n:]) // no stale copies past the end
	for _, p := range problems {
		s.Problems = append(s.Problems, p...)
	}
	events, extra, err := checkTrials(events[:n], lineOf, &lineIndex{data: rest})
	if err != nil {
		return nil, err
	}
	s.Events = events[:len(events):len(events)]
	if len(extra) > 0 {
		s.Problems = append(s.Problems, extra...)
		sort.SliceStable(s.Problems, func(i, j int) bool { return s.Problems[i].Line < s.Problems[j].Line })
	}
	return s, nil
}

// lineProblem is a problem with one line; fatal ones make the file
// unreadable as one session.
type lineProblem struct {
	LineError
	fatal bool
}

// decodeLine decodes one event line (lineNo is 1-based) of a session of
// arms. Blank lines give neither an event nor a problem.
func decodeLine(raw []byte, lineNo int, in *interner, fast bool, arms []string) (lab.Event, *lineProblem, bool) {
	complete := len(raw) > 0 && raw[len(raw)-1] == '\n'
	line := bytes.TrimSpace(raw)
	var e lab.Event
	if len(line) == 0 {
		return e, nil, false
	}
	if !fast || !decodeTrialFast(line, &e, in) {
		je := new(lab.Event) // a separate variable keeps e off the heap on the fast path
		derr := json.Unmarshal(line, je)
		e = *je
		if derr != nil {
			msg := "corrupt line skipped: " + derr.Error()
			if !complete {
				msg = "truncated last line skipped (the run was probably interrupted): " + derr.Error()
			}
			return e, &lineProblem{LineError: LineError{Line: lineNo, Err: msg}}, false
		}
	}
	if perr := checkEvent(&e, arms); perr != nil {
		if e.Type == "" {
			var h Header
			if json.Unmarshal(line, &h) == nil && h.Format == Format {
				return e, &lineProblem{LineError: LineError{Line: lineNo, Err: fmt.Sprintf(
					"a second session header (session %q, device %q): this file holds more than one session "+
						"(concatenated, e.g. cat a.jsonl b.jsonl); split it before line %d and read each part alone",
					h.ID, h.Device.ID, lineNo)}, fatal: true}, false
			}
		}
		return e, &lineProblem{LineError: LineError{Line: lineNo, Err: "invalid event skipped: " + perr.Error()}}, false
	}
	return e, nil, true
}

// maxListedUnitChanges is how many lines of one metric's unit change are
// listed one by one; the rest are summed up in one problem.
const maxListedUnitChanges = 5

// checkTrials checks the trials among events (lineOf[i] is events[i]'s
// line, lines the raw lines from line 2) for duplicate and out-of-order
// indices and for metrics changing unit; see Read. It returns the events
// kept (a prefix of events, reused) and the problems found.
func checkTrials(events []lab.Event, lineOf []int32, lines *lineIndex) ([]lab.Event, []LineError, error) {
	var probs []LineError
	maxIndex, maxLine := -1, 0
	var byIndex map[int]int // trial index → position in out; built at the first index not above maxIndex
	type unitSeen struct {
		name, unit string
		line       int
		changed    int // values left out for another unit
		lastLine   int
		lastUnit   string
	}
	var units []unitSeen
	n := 0
	for k := range events {
		e := &events[k]
		line := int(lineOf[k])
		if e.Type != lab.EventTrial {
			if n != k {
				events[n], lineOf[n] = *e, lineOf[k]
			}
			n++
			continue
		}
		t := e.Trial
		if t.Index > maxIndex {
			maxIndex, maxLine = t.Index, line
			if byIndex != nil {
				byIndex[t.Index] = n
			}
		} else {
			if byIndex == nil {
				byIndex = map[int]int{}
				for i := 0; i < n; i++ {
					if events[i].Type == lab.EventTrial {
						if _, dup := byIndex[events[i].Trial.Index]; !dup {
							byIndex[events[i].Trial.Index] = i
						}
					}
				}
			}
			if i, seen := byIndex[t.Index]; seen {
				prevLine := int(lineOf[i])
				if sameTrial(&events[i], e, lines.line(prevLine-2), lines.line(line-2)) {
					probs = append(probs, LineError{Line: line, Err: fmt.Sprintf(
						"duplicate of line %d (trial index %d) skipped: counted once", prevLine, t.Index)})
					continue
				}
				return nil, nil, fmt.Errorf("line %d: trial index %d is also on line %d with different content: "+
					"the session is inconsistent (two runs merged, or edited); neither can be trusted", line, t.Index, prevLine)
			}
			byIndex[t.Index] = n
			probs = append(probs, LineError{Line: line, Err: fmt.Sprintf(
				"trial index %d out of order (after index %d on line %d)", t.Index, maxIndex, maxLine)})
		}
		// A metric's unit is the one of its first value.
		ms := t.Metrics
		kept := ms[:0]
		for j := range ms {
			m := &ms[j]
			u := j
			if u >= len(units) || units[u].name != m.Name {
				u = -1
				for i := range units {
					if units[i].name == m.Name {
						u = i
						break
					}
				}
				if u < 0 {
					u = len(units)
					units = append(units, unitSeen{name: m.Name, unit: m.Unit, line: line})
				}
			}
			us := &units[u]
			if us.unit == m.Unit {
				if len(kept) != j {
					kept = append(kept, *m)
				} else {
					kept = kept[:j+1]
				}
				continue
			}
			us.changed++
			us.lastLine, us.lastUnit = line, m.Unit
			if us.changed <= maxListedUnitChanges {
				probs = append(probs, LineError{Line: line, Err: fmt.Sprintf(
					"metric %q in %s left out: its unit is %s (line %d); a metric's unit must not change within a session",
					m.Name, unitName(m.Unit), unitName(us.unit), us.line)})
			}
		}
		if len(kept) != len(ms) {
			t.Metrics = kept
		}
		if n != k {
			events[n], lineOf[n] = *e, lineOf[k]
		}
		n++
	}
	for _, us := range units {
		if more := us.changed - maxListedUnitChanges; more > 0 {
			probs = append(probs, LineError{Line: us.lastLine, Err: fmt.Sprintf(
				"metric %q: %d more values in another unit than %s (line %d) left out, the last one in %s",
				us.name, more, unitName(us.unit), us.line, unitName(us.lastUnit))})
		}
	}
	return events[:n], probs, nil
}

// lineIndex finds raw lines by number; it scans the file only when first
// asked (a duplicate trial), not for every session.
type lineIndex struct {
	data   []byte
	starts []int
}

// line returns the k-th line of data (0-based).
func (li *lineIndex) line(k int) []byte {
	if li.starts == nil {
		li.starts = []int{0}
		for i, c := range li.data {
			if c == '\n' {
				li.starts = append(li.starts, i+1)
			}
		}
	}
	if k < 0 || k >= len(li.starts) {
		return nil
	}
	end := len(li.data)
	if k+1 < len(li.starts) {
		end = li.starts[k+1]
	}
	return li.data[li.starts[k]:end]
}

func unitName(u string) string {
	if u == "" {
		return "no unit"
	}
	return strconv.Quote(u)
}

// sameTrial reports whether two trial events are the same record: the
// same line, or the same content written differently.
func sameTrial(a, b *lab.Event, rawA, rawB []byte) bool {
	if bytes.Equal(bytes.TrimSpace(rawA), bytes.TrimSpace(rawB)) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func readHeader(line []byte, h *Header) error {
	if err := json.Unmarshal(line, h); err != nil {
		return fmt.Errorf("not a perflab session header: %v", err)
	}
	if h.Format != Format {
		return fmt.Errorf("not a perflab session (format %q, want %q)", h.Format, Format)
	}
	if h.Version != Version {
		return fmt.Errorf("session version %d is not supported (this perflab reads version %d)", h.Version, Version)
	}
	return nil
}

// checkEvent rejects events whose payload does not match their type, and
// trials of an arm the session's plan does not have (arms: the plan's arm
// keys; a session without "arms" in its plan has control and treatment).
func checkEvent(e *lab.Event, arms []string) error {
	var ok bool
	switch e.Type {
	case lab.EventSettings:
		ok = e.Settings != nil
	case lab.EventProbe:
		ok = e.Probe != nil
	case lab.EventTrial:
		ok = e.Trial != nil
		if !ok {
			break
		}
		switch t := e.Trial; {
		case t.Arm == "":
			return errors.New("trial without an arm")
		case !slices.Contains(arms, t.Arm):
			return fmt.Errorf("trial %d has unknown arm %q (want %s), not counted", t.Index, t.Arm, quoteList(arms))
		case t.Status != lab.StatusOK && t.Status != lab.StatusFailed && t.Status != lab.StatusTimeout && t.Status != lab.StatusInterrupted:
			return fmt.Errorf("trial %d has unknown status %q (want %q, %q, %q or %q), not counted", t.Index, t.Status, lab.StatusOK, lab.StatusFailed, lab.StatusTimeout, lab.StatusInterrupted)
		case t.Index < 0:
			return fmt.Errorf("trial has negative index %d", t.Index)
		}
	case lab.EventToggle:
		ok = e.Toggle != nil
	case lab.EventNote:
		ok = e.Note != nil
	case lab.EventEnd:
		ok = e.End != nil
	case lab.EventDevice:
		ok = e.Device != nil
		if ok {
			switch d := e.Device; {
			case d.Device == "":
				return errors.New(`device event without its "device" ID`)
			case !lab.ValidDeviceState(d.State):
				return fmt.Errorf("device event for %s has unknown state %q (want %q, %q or %q)", d.Device, d.State, lab.DeviceOffline, lab.DeviceBack, lab.DeviceLeft)
			}
		}
	case lab.EventStart:
		ok = e.Start != nil
		if ok {
			switch st := e.Start; {
			case st.Device == "":
				return errors.New(`start event without its "device" ID`)
			case !slices.Contains(arms, st.Arm):
				return fmt.Errorf("start event on %s has unknown arm %q (want %s)", st.Device, st.Arm, quoteList(arms))
			case st.Round < 0:
				return fmt.Errorf("start event on %s has negative round %d", st.Device, st.Round)
			}
		}
	case "":
		return errors.New(`no "type"`)
	default:
		return fmt.Errorf("unknown event type %q", e.Type)
	}
	if !ok {
		return fmt.Errorf("%s event without its %q object", e.Type, e.Type)
	}
	return nil
}

// quoteList words a list of names: "a" or "b", or "a", "b" or "c".
func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
