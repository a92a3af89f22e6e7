package tui

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/perflab/perflab/lab"
)

// devicesPane is the device picker: every backend's devices with their state
// and capabilities. Space marks devices for a pool (one experiment over
// several devices, lab.Pool); enter then starts on the marked ones.
type devicesPane struct {
	st      *Styles
	devices []lab.DeviceInfo
	cursor  int
	marked  []string // IDs marked for a pool, in the order marked
	loading bool
	err     error
	keys    devicesKeys
	width   int
	height  int
	prefer  string // device id to put the cursor on once listed
}

type devicesKeys struct {
	list    listKeys
	Select  key.Binding
	Mark    key.Binding
	Refresh key.Binding
	Check   key.Binding
}

func newDevicesKeys() devicesKeys {
	return devicesKeys{
		list:    newListKeys(),
		Select:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "use device")),
		Mark:    key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "mark pool")),
		Refresh: key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		Check:   key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "stability check")),
	}
}

func newDevicesPane(st *Styles, prefer string) devicesPane {
	return devicesPane{st: st, keys: newDevicesKeys(), loading: true, prefer: prefer}
}

// listDevices lists devices off the Update path.
func listDevices(ctx context.Context, b Backend) tea.Cmd {
	return func() tea.Msg {
		if b.ListDevices == nil {
			return devicesListedMsg{err: fmt.Errorf("no device backends in this build")}
		}
		devs, err := b.ListDevices(ctx)
		return devicesListedMsg{devices: devs, err: err}
	}
}

// deviceChosenMsg says the user picked a device (for a run or a check),
// or marked several for a pool: pool lists their IDs (device is the
// first), nil for one device.
type deviceChosenMsg struct {
	device lab.DeviceInfo
	pool   []string
	check  bool
}

// usable reports whether trials can run on d, and why not.
func usable(d lab.DeviceInfo) (bool, string) {
	switch d.State {
	case "", "device":
		return true, ""
	case "unauthorized":
		return false, d.ID + " is unauthorized: accept the USB debugging prompt on the phone, then refresh"
	default:
		return false, d.ID + " is " + d.State + ": reconnect it, then refresh (r)"
	}
}

func (p devicesPane) Update(msg tea.Msg) (devicesPane, tea.Cmd) {
	switch msg := msg.(type) {
	case devicesListedMsg:
		p.loading = false
		p.err = msg.err
		if msg.err == nil || len(msg.devices) > 0 {
			p.setDevices(msg.devices)
		}
	case tea.KeyPressMsg:
		switch {
		case moveCursor(msg, p.keys.list, &p.cursor, len(p.devices)):
		case key.Matches(msg, p.keys.Refresh):
			p.loading = true
			return p, func() tea.Msg { return refreshDevicesMsg{} }
		case key.Matches(msg, p.keys.Mark):
			p.err = p.toggle()
		case key.Matches(msg, p.keys.Select) && len(p.marked) > 0:
			return p, p.choosePool()
		case key.Matches(msg, p.keys.Select), key.Matches(msg, p.keys.Check):
			d, ok := p.selected()
			if !ok {
				return p, nil
			}
			if ok, why := usable(d); !ok {
				p.err = fmt.Errorf("%s", why)
				return p, nil
			}
			check := key.Matches(msg, p.keys.Check)
			if check && !d.Has(lab.CapProbe) {
				p.err = fmt.Errorf("%s cannot run the MFLOPS probe", d.ID)
				return p, nil
			}
			p.err = nil
			return p, func() tea.Msg { return deviceChosenMsg{device: d, check: check} }
		}
	}
	return p, nil
}

// toggle marks the device under the cursor for a pool, or unmarks it.
// A pool's devices are usable and of one backend (their builds are
// chosen once for all).
func (p *devicesPane) toggle() error {
	d, ok := p.selected()
	if !ok {
		return nil
	}
	if i := slices.Index(p.marked, d.ID); i >= 0 {
		p.marked = slices.Delete(p.marked, i, i+1)
		return nil
	}
	if ok, why := usable(d); !ok {
		return fmt.Errorf("%s", why)
	}
	if len(p.marked) > 0 {
		if first, ok := p.find(p.marked[0]); ok && first.Backend != d.Backend {
			return fmt.Errorf("a pool's devices share a backend: %s is %s, the pool is %s", d.ID, d.Backend, first.Backend)
		}
	}
	p.marked = append(p.marked, d.ID)
	return nil
}

// choosePool picks the marked devices: a pool of two or more, or the one.
func (p *devicesPane) choosePool() tea.Cmd {
	var ids []string
	var first lab.DeviceInfo
	for _, id := range p.marked {
		d, ok := p.find(id)
		if !ok {
			continue // gone since the refresh
		}
		if ok, why := usable(d); !ok {
			p.err = fmt.Errorf("%s", why)
			return nil
		}
		if len(ids) == 0 {
			first = d
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		p.marked, p.err = nil, fmt.Errorf("the marked devices are gone: mark others (space)")
		return nil
	}
	p.err = nil
	msg := deviceChosenMsg{device: first}
	if len(ids) > 1 {
		msg.pool = ids
	}
	return func() tea.Msg { return msg }
}

// find returns the listed device id.
func (p devicesPane) find(id string) (lab.DeviceInfo, bool) {
	for _, d := range p.devices {
		if d.ID == id {
			return d, true
		}
	}
	return lab.DeviceInfo{}, false
}

// refreshDevicesMsg asks the root to list devices again.
type refreshDevicesMsg struct{}

func (p *devicesPane) setDevices(devs []lab.DeviceInfo) {
	prev := ""
	if d, ok := p.selected(); ok {
		prev = d.ID
	} else {
		prev = p.prefer
	}
	// Simulated phones first (they need nothing), then this host, then
	// phones.
	rank := func(d lab.DeviceInfo) int {
		switch {
		case d.Has(lab.CapSimTime):
			return 0
		case d.Has(lab.CapCommandBuilds):
			return 1
		}
		return 2
	}
	devs = append([]lab.DeviceInfo(nil), devs...)
	sort.SliceStable(devs, func(i, j int) bool { return rank(devs[i]) < rank(devs[j]) })
	p.devices = devs
	p.cursor = 0
	for i, d := range devs {
		if d.ID == prev {
			p.cursor = i
		}
	}
}

func (p devicesPane) selected() (lab.DeviceInfo, bool) {
	if p.cursor < 0 || p.cursor >= len(p.devices) {
		return lab.DeviceInfo{}, false
	}
	return p.devices[p.cursor], true
}

// ShortHelp lists the picker keys.
func (k devicesKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.list.Up, k.list.Down, k.Select, k.Mark, k.Check, k.Refresh}
}

// FullHelp groups the picker keys.
func (k devicesKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.list.Up, k.list.Down}, {k.Select, k.Mark, k.Check, k.Refresh}}
}

// ShortHelp lists the picker keys.
func (p devicesPane) ShortHelp() []key.Binding { return p.keys.ShortHelp() }

// FullHelp groups the picker keys.
func (p devicesPane) FullHelp() [][]key.Binding { return p.keys.FullHelp() }

// Typing: the picker has no prompt.
func (p devicesPane) Typing() bool { return false }

// CanLeave: the picker is the first step.
func (p devicesPane) CanLeave() bool { return false }

func (p *devicesPane) SetSize(w, h int) { p.width, p.height = w, h }

func (p devicesPane) View() string {
	st := p.st
	var b strings.Builder
	switch {
	case p.loading && len(p.devices) == 0:
		b.WriteString(st.Muted.Render("listing devices…") + "\n")
	case len(p.devices) == 0:
		b.WriteString("no devices found\n")
	}
	detail := 0
	if d, ok := p.selected(); ok {
		detail = len(p.detail(d))
	}
	avail := p.height - detail - 2
	if p.err != nil {
		avail--
	}
	if len(p.marked) > 0 {
		avail--
	}
	if rows := p.table(avail); rows != "" {
		b.WriteString(rows + "\n")
	}
	if p.loading && len(p.devices) > 0 {
		b.WriteString(st.Muted.Render("  refreshing…") + "\n")
	}
	if n := len(p.marked); n > 0 {
		b.WriteString(st.Header.Render(truncate(fmt.Sprintf("  pool of %d marked: %s · enter starts on them", n, strings.Join(p.marked, ", ")), p.width)) + "\n")
	}
	if d, ok := p.selected(); ok {
		b.WriteString("\n")
		for _, l := range p.detail(d) {
			b.WriteString(l + "\n")
		}
	}
	if p.err != nil {
		b.WriteString(st.Error.Render(truncate(p.err.Error(), p.width)) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// table draws the devices in view (avail rows around the cursor) as a
// lipgloss table without borders: the cursor, the pool's mark once one is
// marked, ID, backend, model, state and the number of capabilities; the
// cursor's row selected, a device that cannot run trials greyed.
func (p devicesPane) table(avail int) string {
	st := p.st
	first, avail := visibleRange(p.cursor, avail)
	last := min(first+avail, len(p.devices))
	if first >= last {
		return ""
	}
	var rows [][]string
	states := make([]string, 0, last-first)
	for i := first; i < last; i++ {
		d := p.devices[i]
		state := d.State
		if state == "" {
			state = "ready"
		}
		states = append(states, state)
		var row []string
		if len(p.marked) > 0 { // the pool's mark column, shown once a device is marked
			mark := ""
			if slices.Contains(p.marked, d.ID) {
				mark = "●"
			}
			row = append(row, mark)
		}
		rows = append(rows, append(row, d.ID, d.Backend, d.Model, state, fmt.Sprintf("%2d caps", len(d.Caps))))
	}
	cur := p.cursor - first
	return pickerTable(st, rows, cur, p.width, func(row, col int) (lipgloss.Style, bool) {
		return st.Disabled, row != cur && states[row] != "ready" && states[row] != "device"
	})
}

// detail describes the selected device: capabilities and notes.
func (p devicesPane) detail(d lab.DeviceInfo) []string {
	st := p.st
	caps := strings.Join(d.Caps, " ")
	if caps == "" {
		caps = "none"
	}
	// Wrap the capability list: a phone has a dozen.
	var lines []string
	line := st.Header.Render("capabilities:")
	for _, c := range strings.Fields(caps) {
		if lipgloss.Width(line)+1+len(c) > p.width && len(lines) < 2 {
			lines = append(lines, line)
			line = " "
		}
		line += " " + c
	}
	lines = append(lines, truncate(line, p.width))
	if d.Server != "" {
		lines = append(lines, truncate(st.Muted.Render("adb server: "+d.Server), p.width))
	}
	for _, n := range d.Notes {
		lines = append(lines, truncate(st.Warning.Render("note: ")+n, p.width))
	}
	return lines
}
