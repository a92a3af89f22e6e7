package devices

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/perflab/perflab/lab"
)

// Selector is a pool selector: a device spec that stands for every online
// device matching it, e.g. "adb:model=Pixel 3" (every phone of that model
// on every given adb server).
type Selector struct {
	Backend string // "adb"
	Key     string // "model"
	Value   string // "Pixel 3"
}

// ParseSelector reports whether spec is a pool selector
// ("BACKEND:KEY=VALUE") and parses it. Only adb has selectors, by model.
func ParseSelector(spec string) (Selector, bool, error) {
	name, arg, _ := strings.Cut(strings.TrimSpace(spec), ":")
	key, value, ok := strings.Cut(arg, "=")
	if !ok || strings.ContainsAny(key, ":.") {
		return Selector{}, false, nil // a serial such as 127.0.0.1:5555 has no '=' before its first ':'
	}
	sel := Selector{Backend: name, Key: strings.TrimSpace(key), Value: strings.TrimSpace(value)}
	if name != "adb" {
		return sel, true, fmt.Errorf("device %q: only adb has pool selectors (adb:model=MODEL)", spec)
	}
	if sel.Key != "model" {
		return sel, true, fmt.Errorf("device %q: unknown selector %q (want adb:model=MODEL)", spec, sel.Key)
	}
	if sel.Value == "" {
		return sel, true, fmt.Errorf("device %q: name the model, e.g. adb:model=Pixel 3 (perflab devices lists the models)", spec)
	}
	return sel, true, nil
}

// Match reports whether an online device matches the selector. Models
// match without regard to case, with '_' (as adb devices -l prints them)
// taken as a space.
func (s Selector) Match(d lab.DeviceInfo) bool {
	norm := func(m string) string { return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(m), "_", " ")) }
	return d.Backend == s.Backend && d.State == "device" && norm(d.Model) == norm(s.Value)
}

// Resolve turns device specs into device IDs: an ID stays as it is, a
// pool selector becomes every online device that matches it (sorted by
// ID) on opt.ADBServers. Listing happens only when a selector is given.
// A selector that matches nothing, or a device named twice, is an error.
func Resolve(ctx context.Context, specs []string, opt Options) ([]string, error) {
	var out []string
	seen := map[string]string{}
	var listed []lab.DeviceInfo
	var listErr error
	didList := false
	for _, spec := range specs {
		sel, isSel, err := ParseSelector(spec)
		if err != nil {
			return nil, err
		}
		ids := []string{strings.TrimSpace(spec)}
		if isSel {
			if !didList {
				listed, listErr = listADB(ctx, opt)
				didList = true
			}
			ids = nil
			for _, d := range listed {
				if sel.Match(d) {
					ids = append(ids, d.ID)
				}
			}
			sort.Strings(ids)
			if len(ids) == 0 {
				msg := fmt.Sprintf("device %q: no online phone of model %q", spec, sel.Value)
				if listErr != nil {
					return nil, fmt.Errorf("%s (%w)", msg, listErr)
				}
				return nil, errors.New(msg + " on " + serversText(opt.ADBServers) + " (perflab devices lists them)")
			}
		}
		for _, id := range ids {
			if prev, dup := seen[id]; dup {
				return nil, fmt.Errorf("device %s is named twice (%q and %q)", id, prev, spec)
			}
			seen[id] = spec
			out = append(out, id)
		}
	}
	return out, nil
}

func serversText(servers []string) string {
	if len(servers) == 0 {
		return "the default adb server"
	}
	return "adb servers " + strings.Join(servers, ", ")
}
