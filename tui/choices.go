package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
)

// lastChoices are the workbench's choices of the last run started from
// its pickers, offered first on the next launch (issue 29: a second
// launch had the controls off again and the trials back to the
// default). The builds are the recent-builds list's first two.
type lastChoices struct {
	Device   string        `json:"device,omitempty"`
	Backend  string        `json:"backend,omitempty"` // the device's backend: the controls apply to its kind
	Controls *lab.Controls `json:"controls,omitempty"`
	Trials   int           `json:"trials,omitempty"`
}

// loadChoices reads the last choices; a missing file is none.
func loadChoices(path string) (lastChoices, error) {
	var c lastChoices
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return lastChoices{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// saveJSON writes v to path atomically (temp file, rename) off the Update
// path; what names the file in an error. No path, no command.
func saveJSON(path, what string, v any) tea.Cmd {
	if path == "" {
		return nil
	}
	return func() tea.Msg {
		err := func() error {
			data, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return err
			}
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, path)
		}()
		if err != nil {
			err = fmt.Errorf("saving %s: %w", what, err)
		}
		return savedMsg{err: err}
	}
}

// remember sets the stepper to the last run's controls (those this device
// offers, with a value its row has) and trial count.
func (p *controlsPane) remember(c lastChoices) {
	if c.Trials > 0 {
		p.trials = c.Trials
	}
	if c.Controls == nil || c.Backend != p.device.Backend {
		return
	}
	for _, r := range p.rows {
		if r.def.key == "" || !p.supported(r) {
			continue
		}
		if v := r.def.get(*c.Controls); slices.Contains(r.def.values, v) {
			setControl(&p.controls, r.def.key, v)
		}
	}
}
