package tui

import (
	"charm.land/bubbles/v2/filepicker"
	"charm.land/lipgloss/v2"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
)

// buildItem is one row of the build picker: a ready build, a recent one, or
// an action that asks for a command or an APK file.
type buildItem struct {
	choice BuildChoice
	recent bool
	action string // "", "command", "apk"
}

// buildsPane picks the control (A) and treatment (B) builds.
type buildsPane struct {
	st     *Styles
	device lab.DeviceInfo
	items  []buildItem
	cursor int
	arm    int // 0 control, 1 treatment
	chosen [2]*BuildChoice

	mode    string // "", "command", "apk", "package"
	input   textinput.Model
	files   filepicker.Model
	pending lab.Build // APK chosen, waiting for its package name
	err     error

	keys   buildsKeys
	width  int
	height int
}

type buildsKeys struct {
	list   listKeys
	Choose key.Binding
	Arm    key.Binding
	Clear  key.Binding
}

func newBuildsKeys() buildsKeys {
	return buildsKeys{
		list:   newListKeys(),
		Choose: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "choose")),
		Arm:    key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "switch A/B")),
		Clear:  key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "clear arm")),
	}
}

func newBuildsPane(st *Styles, dev lab.DeviceInfo, ready []BuildChoice, recent []recentBuild) buildsPane {
	p := buildsPane{st: st, device: dev, keys: newBuildsKeys()}
	// Recently used builds come first, the last run's A then B (a ready
	// build among them moves up): they are usually what comes next.
	var recents []buildItem
	used := make([]bool, len(ready))
	for _, r := range recent {
		if r.Backend != dev.Backend {
			continue
		}
		c := BuildChoice{Label: r.Label, Detail: "recently used", Build: r.Build}
		if i := offered(ready, r.Build); i >= 0 {
			if used[i] {
				continue
			}
			used[i] = true
			c = ready[i]
			c.Detail = strings.TrimSuffix("recently used · "+c.Detail, " · ")
		}
		recents = append(recents, buildItem{choice: c, recent: true})
	}
	p.items = recents
	for i, c := range ready {
		if !used[i] {
			p.items = append(p.items, buildItem{choice: c})
		}
	}
	if dev.Has(lab.CapCommandBuilds) {
		p.items = append(p.items, buildItem{action: "command", choice: BuildChoice{Label: "command…", Detail: "type a shell command line (run with sh -c)"}})
	}
	if dev.Has(lab.CapAPKBuilds) {
		p.items = append(p.items, buildItem{action: "apk", choice: BuildChoice{Label: "APK file…", Detail: "pick an .apk file, then name its package"}})
	}
	p.input = newTextInput()
	p.input.SetWidth(60)
	return p
}

// offered is the index of b among the ready builds, or -1.
func offered(ready []BuildChoice, b lab.Build) int {
	for i, c := range ready {
		if sameBuild(c.Build, b) {
			return i
		}
	}
	return -1
}

// buildsDoneMsg says both arms have a build.
type buildsDoneMsg struct{ control, treatment lab.Build }

// editing reports whether a text input or the file picker has the keys.
func (p buildsPane) editing() bool { return p.mode != "" }

func (p buildsPane) Update(msg tea.Msg) (buildsPane, tea.Cmd) {
	switch p.mode {
	case "command", "package":
		return p.updateInput(msg)
	case "apk":
		return p.updateFiles(msg)
	}
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return p, nil
	}
	switch {
	case moveCursor(km, p.keys.list, &p.cursor, len(p.items)):
	case key.Matches(km, p.keys.Arm):
		p.arm = 1 - p.arm
	case key.Matches(km, p.keys.Clear):
		p.chosen[p.arm] = nil
	case key.Matches(km, p.keys.Choose):
		if p.cursor >= len(p.items) {
			return p, nil
		}
		it := p.items[p.cursor]
		switch it.action {
		case "command":
			p.mode = "command"
			p.input.Reset()
			p.input.Placeholder = "./bench --iterations 100"
			p.input.Prompt = "command> "
			return p, p.input.Focus()
		case "apk":
			p.mode = "apk"
			wd, _ := os.Getwd()
			p.files = newAPKPicker(p.st, wd, p.height-4)
			return p, p.files.Init()
		}
		c := it.choice
		return p.choose(c)
	}
	return p, nil
}

// choose sets the current arm's build and moves on: to the other arm if it
// is still empty, else to the controls.
func (p buildsPane) choose(c BuildChoice) (buildsPane, tea.Cmd) {
	p.chosen[p.arm] = &c
	p.err = nil
	if p.chosen[1-p.arm] == nil {
		p.arm = 1 - p.arm
		// B is usually the next entry (a build with an effect, a newer APK).
		if p.cursor < len(p.items)-1 && p.items[p.cursor+1].action == "" {
			p.cursor++
		}
		return p, nil
	}
	a, b := p.chosen[0].Build, p.chosen[1].Build
	return p, func() tea.Msg { return buildsDoneMsg{control: a, treatment: b} }
}

func (p buildsPane) updateInput(msg tea.Msg) (buildsPane, tea.Cmd) {
	if km, ok := msg.(tea.KeyPressMsg); ok {
		switch km.String() {
		case "esc":
			p.mode = ""
			p.input.Blur()
			return p, nil
		case "enter":
			v := strings.TrimSpace(p.input.Value())
			if v == "" && p.mode == "command" {
				p.err = fmt.Errorf("the command is empty")
				return p, nil
			}
			mode := p.mode
			p.mode = ""
			p.input.Blur()
			if mode == "command" {
				return p.choose(BuildChoice{Label: v, Detail: "command", Build: lab.Build{Name: v, Command: []string{"sh", "-c", v}}})
			}
			b := p.pending
			pkg, act, _ := strings.Cut(v, "/")
			b.Package, b.Activity = pkg, act
			return p.choose(BuildChoice{Label: b.Name, Detail: "APK " + b.APK, Build: b})
		}
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	return p, cmd
}

func (p buildsPane) updateFiles(msg tea.Msg) (buildsPane, tea.Cmd) {
	if km, ok := msg.(tea.KeyPressMsg); ok && km.String() == "esc" {
		p.mode = ""
		return p, nil
	}
	var cmd tea.Cmd
	p.files, cmd = p.files.Update(msg)
	ok, chosen := p.files.DidSelectFile(msg)
	if !ok {
		return p, cmd
	}
	p.pending = lab.Build{Name: filepath.Base(chosen), APK: chosen}
	p.mode = "package"
	p.input.Reset()
	p.input.Prompt = "package[/activity]> "
	p.input.Placeholder = "com.example.app/.MainActivity (empty: read from the APK)"
	return p, p.input.Focus()
}

// ShortHelp lists the picker keys.
func (k buildsKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.list.Up, k.list.Down, k.Choose, k.Arm}
}

// FullHelp groups the picker keys.
func (k buildsKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.list.Up, k.list.Down}, {k.Choose, k.Arm, k.Clear}}
}

// promptKeys are the bindings while a prompt or the file picker is open.
func promptKeys() []key.Binding {
	esc := key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel"))
	ok := key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "ok"))
	return []key.Binding{ok, esc}
}

// ShortHelp lists the keys that do something now.
func (p buildsPane) ShortHelp() []key.Binding {
	if p.editing() {
		return promptKeys()
	}
	return p.keys.ShortHelp()
}

// FullHelp groups them.
func (p buildsPane) FullHelp() [][]key.Binding {
	if p.editing() {
		return [][]key.Binding{promptKeys()}
	}
	return p.keys.FullHelp()
}

// Typing reports whether a prompt or the file picker has the keys.
func (p buildsPane) Typing() bool { return p.editing() }

// CanLeave: esc goes back to the device picker.
func (p buildsPane) CanLeave() bool { return true }

func (p *buildsPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.input.SetWidth(max(10, w-24))
	p.files.SetHeight(max(3, h-4))
}

func (p buildsPane) View() string {
	st := p.st
	var b strings.Builder
	for i, name := range []string{"A control  ", "B treatment"} {
		mark := "  "
		if i == p.arm {
			mark = st.Cursor.Render("▸ ")
		}
		val := st.Muted.Render("(choose below)")
		if c := p.chosen[i]; c != nil {
			val = c.Label
			if c.Detail != "" {
				val += st.Muted.Render("  " + c.Detail)
			}
		}
		b.WriteString(truncate(mark+st.Header.Render(name)+"  "+val, p.width) + "\n")
	}
	b.WriteString("\n")
	switch p.mode {
	case "command", "package":
		b.WriteString(p.input.View() + "\n")
	case "apk":
		b.WriteString(truncate(st.Header.Render("APK file in ")+p.files.CurrentDirectory, p.width) + "\n")
		for _, line := range strings.Split(strings.TrimRight(p.files.View(), "\n"), "\n") {
			b.WriteString(truncate(line, p.width) + "\n") // long file names must not wrap
		}
	default:
		arm := "control (A)"
		if p.arm == 1 {
			arm = "treatment (B)"
		}
		b.WriteString(st.Muted.Render("build for the "+arm+":") + "\n")
		avail := p.height - 5
		if p.err != nil {
			avail--
		}
		first, avail := visibleRange(p.cursor, avail)
		if len(p.items) == 0 {
			b.WriteString("  no builds known for " + p.device.ID + "\n")
		}
		var rows [][]string
		for i := first; i < len(p.items) && i < first+avail; i++ {
			rows = append(rows, []string{p.items[i].choice.Label, p.items[i].choice.Detail})
		}
		if len(rows) > 0 {
			b.WriteString(pickerTable(st, rows, p.cursor-first, p.width, func(row, col int) (lipgloss.Style, bool) {
				return st.Muted, col == 1 // the build's description
			}) + "\n")
		}
	}
	if p.err != nil {
		b.WriteString(st.Error.Render(p.err.Error()) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// newAPKPicker is bubbles' file picker over dir, offering APK files.
func newAPKPicker(st *Styles, dir string, height int) filepicker.Model {
	fp := filepicker.New()
	fp.CurrentDirectory = dir
	fp.AllowedTypes = []string{".apk", ".APK"}
	fp.ShowPermissions = false
	fp.AutoHeight = false
	fp.SetHeight(max(3, height))
	fs := filepicker.DefaultStyles()
	fs.Cursor, fs.Selected = st.Cursor, st.Selected
	fs.Directory, fs.File, fs.Symlink = st.Header, lipgloss.NewStyle(), st.Muted
	fs.DisabledCursor, fs.DisabledFile, fs.DisabledSelected = st.Disabled, st.Disabled, st.Disabled
	fs.FileSize = st.Muted.Width(fs.FileSize.GetWidth()).Align(fs.FileSize.GetAlign())
	fs.EmptyDirectory = st.Muted.PaddingLeft(2).SetString("no files here")
	fp.Styles = fs
	return fp
}
