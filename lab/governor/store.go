package governor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/perflab/perflab/lab"
)

// Tuned is what `perflab tune` saves as <model>.json under ProfileDir.
type Tuned struct {
	Model       string              `json:"model"`
	Device      string              `json:"device"`
	Created     time.Time           `json:"created"`
	DurationS   float64             `json:"duration_s"`
	Recommended lab.GovernorProfile `json:"recommended"`
	// Candidates holds every profile checked with its stability summary,
	// kept as raw JSON so this package does not depend on analysis.
	Candidates []json.RawMessage `json:"candidates,omitempty"`
}

// ProfileDir is where tuned profiles live: os.UserConfigDir()/perflab/profiles.
func ProfileDir() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory for tuned profiles: %w", err)
	}
	return filepath.Join(d, "perflab", "profiles"), nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// FileName turns a device model into a safe file name, e.g. "Pixel 3" → "Pixel_3.json".
func FileName(model string) string {
	n := strings.Trim(unsafeName.ReplaceAllString(model, "_"), "_.")
	if n == "" {
		n = "unknown"
	}
	return n + ".json"
}

// SaveTuned writes t to ProfileDir()/<model>.json and returns the path.
func SaveTuned(t Tuned) (string, error) {
	dir, err := ProfileDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, FileName(t.Model))
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// LoadTuned reads the tuned profile saved for model; the error wraps
// fs.ErrNotExist when there is none.
func LoadTuned(model string) (Tuned, string, error) {
	var t Tuned
	dir, err := ProfileDir()
	if err != nil {
		return t, "", err
	}
	p := filepath.Join(dir, FileName(model))
	b, err := os.ReadFile(p)
	if err != nil {
		return t, p, err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, p, fmt.Errorf("%s: %w", p, err)
	}
	return t, p, nil
}

// Resolver names the profiles a device knows besides the saved ones, e.g.
// the sim presets' built-in "recommended" profile.
type Resolver func(name string) (lab.GovernorProfile, bool)

// Resolve turns the experiment file's controls.governor value into a
// profile. It accepts:
//   - nothing, "", "stock" or "off": no profile (nil), leave the device alone;
//   - "recommended" or "tuned": the profile `perflab tune` saved for model,
//     else builtin("recommended");
//   - another name: builtin(name);
//   - a path to a JSON file holding a profile or a tune result;
//   - an inline profile object.
func Resolve(raw json.RawMessage, model string, builtin Resolver) (*lab.GovernorProfile, error) {
	return ResolveField("controls.governor", raw, model, builtin)
}

// ResolveField is Resolve with errors naming field (e.g. "--profile").
func ResolveField(field string, raw json.RawMessage, model string, builtin Resolver) (*lab.GovernorProfile, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '{' {
		var p lab.GovernorProfile
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return &p, nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return nil, fmt.Errorf("%s: want a profile name or object, got %s", field, raw)
	}
	switch name {
	case "", "stock", "off":
		return nil, nil
	case "recommended", "tuned":
		t, _, err := LoadTuned(model)
		if err == nil {
			p := t.Recommended
			if p.Name == "" {
				p.Name = "tuned"
			}
			return &p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if builtin != nil {
			if p, ok := builtin("recommended"); ok {
				return &p, nil
			}
		}
		return nil, fmt.Errorf("%s %q: no tuned profile for %q (run `perflab tune` on this device first)", field, name, model)
	}
	if builtin != nil {
		if p, ok := builtin(name); ok {
			return &p, nil
		}
	}
	if strings.HasSuffix(name, ".json") {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		var t Tuned
		if json.Unmarshal(b, &t) == nil && len(t.Recommended.Clusters) > 0 {
			return &t.Recommended, nil
		}
		var p lab.GovernorProfile
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", field, name, err)
		}
		return &p, nil
	}
	return nil, fmt.Errorf("%s: unknown profile %q (use \"stock\", \"recommended\", a .json file or an inline profile)", field, name)
}
