package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Order modes of a run.
const (
	OrderFixed     = "fixed"     // all control trials, then all treatment trials
	OrderAlternate = "alternate" // control, treatment, control, treatment, ...
	OrderRandom    = "random"    // each round of one control and one treatment shuffled
)

// Defaults applied by ParseExperiment to fields the file leaves out.
const (
	DefaultDevice     = "local"
	DefaultTrials     = 20
	DefaultWarmup     = 1
	DefaultOrder      = OrderRandom
	DefaultAlpha      = 0.05
	DefaultConfidence = 0.95
)

// ValidOrder reports whether mode is one of the order modes.
func ValidOrder(mode string) bool {
	return mode == OrderFixed || mode == OrderAlternate || mode == OrderRandom
}

// LoadExperiment reads and validates the experiment file at path. Relative
// build directories and state_dir are resolved against the file's directory,
// and a build without "dir" runs in that directory.
func LoadExperiment(path string) (*Experiment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	exp, err := ParseExperiment(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	exp.ResolvePaths(base)
	return exp, nil
}

// ResolvePaths makes build directories, files and state_dir absolute, relative to
// base; a build without a directory gets base.
func (e *Experiment) ResolvePaths(base string) {
	for k, b := range e.Builds {
		switch {
		case b.Dir == "":
			if len(b.Command) > 0 {
				b.Dir = base
			}
		case !filepath.IsAbs(b.Dir):
			b.Dir = filepath.Join(base, b.Dir)
		}
		if b.Files != "" && !filepath.IsAbs(b.Files) {
			b.Files = filepath.Join(base, b.Files)
		}
		e.Builds[k] = b
	}
	if e.Controls.StateDir != "" && !filepath.IsAbs(e.Controls.StateDir) {
		e.Controls.StateDir = filepath.Join(base, e.Controls.StateDir)
	}
}

// ParseExperiment decodes an experiment file strictly: unknown fields and
// values of the wrong type are errors naming the field (and the line for
// syntax errors). Missing fields get defaults; a missing seed gets a fresh
// random one so the run stays reproducible from its session.
func ParseExperiment(data []byte) (*Experiment, error) {
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, jsonSyntaxError(data, err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the experiment object")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the experiment must be a JSON object, not %s", jsonKind(raw))
	}
	// A list of builds, base first, is the same as the keyed form.
	var list []Build
	if arr, ok := obj["builds"].([]any); ok {
		if err := checkShape("builds", arr, reflect.TypeOf([]Build{})); err != nil {
			return nil, err
		}
		if len(arr) < 2 {
			return nil, fmt.Errorf("builds: %d build(s) listed, want at least 2 (the base first)", len(arr))
		}
		if len(arr) > MaxArms {
			return nil, fmt.Errorf("builds: %d builds listed, want at most %d", len(arr), MaxArms)
		}
		var wrap struct {
			Builds []Build `json:"builds"`
		}
		if err := json.Unmarshal(data, &wrap); err != nil {
			return nil, err
		}
		list = wrap.Builds
		delete(obj, "builds")
		data, _ = json.Marshal(obj) // numbers stay json.Number: exact
	}
	if err := checkShape("", obj, reflect.TypeOf(Experiment{})); err != nil {
		return nil, err
	}
	var exp Experiment
	if err := json.Unmarshal(data, &exp); err != nil {
		return nil, err
	}
	if list != nil {
		exp.SetBuilds(list)
	}
	_, hasDevice := obj["device"]
	if _, ok := obj["devices"]; ok && hasDevice {
		return nil, errors.New(`devices: give "device" or "devices", not both`)
	} else if !ok && !hasDevice {
		exp.Device = DefaultDevice
	}
	if _, ok := obj["trials"]; !ok {
		exp.Trials = DefaultTrials
	}
	if _, ok := obj["warmup"]; !ok {
		exp.Warmup = DefaultWarmup
	}
	if exp.Order == "" {
		exp.Order = DefaultOrder
	}
	if _, ok := obj["seed"]; !ok {
		exp.Seed = rand.Int64N(1<<31-1) + 1
	}
	if _, ok := obj["alpha"]; !ok {
		exp.Alpha = DefaultAlpha
	}
	if _, ok := obj["confidence"]; !ok {
		exp.Confidence = DefaultConfidence
	}
	if err := exp.Validate(); err != nil {
		return nil, err
	}
	return &exp, nil
}

// Validate checks the fields every backend relies on. Backend-specific
// checks (a local build needs a command) happen in the device's Setup.
func (e *Experiment) Validate() error {
	if len(e.Devices) > 0 {
		if e.Device != "" {
			return errors.New(`devices: give "device" or "devices", not both`)
		}
		seen := map[string]bool{}
		for i, d := range e.Devices {
			if strings.TrimSpace(d) == "" {
				return fmt.Errorf(`devices[%d]: empty (want "local", "sim:<preset>", "adb:<serial>" or "adb:model=<model>")`, i)
			}
			if seen[d] {
				return fmt.Errorf("devices[%d]: %q is listed twice", i, d)
			}
			seen[d] = true
		}
	} else if strings.TrimSpace(e.Device) == "" {
		return errors.New(`device: empty (want "local", "sim:<preset>" or "adb:<serial>")`)
	}
	if len(e.Builds) == 0 {
		return errors.New(`builds: missing (want "control" and "treatment", or a list of builds, the base first)`)
	}
	if err := e.validateArms(); err != nil {
		return err
	}
	for _, k := range e.ArmKeys() {
		if f := e.Builds[k].Effect; f != nil {
			if strings.TrimSpace(f.Function) == "" {
				return fmt.Errorf("builds.%s.effect.function: name the function to slow, e.g. \"feed.decodeImage\"", k)
			}
			if f.Pct <= MinEffectPct {
				return fmt.Errorf("builds.%s.effect.pct: %v is %w (want more than %v)", k, f.Pct, ErrTooSmall, MinEffectPct)
			}
			if err := CheckRange("builds."+k+".effect.pct", f.Pct, MinEffectPct, MaxEffectPct); err != nil {
				return err
			}
		}
		if b := e.Builds[k]; b.EffectPct != 0 {
			if b.EffectPct <= MinEffectPct {
				return fmt.Errorf("builds.%s.effect_pct: %v is %w (want more than %v)", k, b.EffectPct, ErrTooSmall, MinEffectPct)
			}
			if err := CheckRange("builds."+k+".effect_pct", b.EffectPct, MinEffectPct, MaxEffectPct); err != nil {
				return err
			}
		}
	}
	if e.Trials < 1 {
		return fmt.Errorf("trials: %d, want at least 1 (counted trials per arm)", e.Trials)
	}
	if err := CheckRange("trials", e.Trials, 1, MaxTrials); err != nil {
		return err
	}
	if e.Warmup < 0 {
		return fmt.Errorf("warmup: %d, want 0 or more", e.Warmup)
	}
	if !(e.Threshold >= 0 && e.Threshold < 1e6) {
		return fmt.Errorf("threshold: %v, want a percentage of at least 0", e.Threshold)
	}
	if err := CheckRange("warmup", e.Warmup, 0, MaxWarmup); err != nil {
		return err
	}
	if !ValidOrder(e.Order) {
		return fmt.Errorf("order: %q, want fixed, alternate or random", e.Order)
	}
	if len(e.Devices) > 1 && e.Order == OrderFixed {
		return errors.New(`order: "fixed" cannot run on a pool of devices: each device runs whole rounds of one A and one B (want "alternate" or "random")`)
	}
	if !(e.Alpha > 0 && e.Alpha < 1) {
		return fmt.Errorf("alpha: %v, want a number between 0 and 1 (e.g. 0.05)", e.Alpha)
	}
	if !(e.Confidence > 0 && e.Confidence < 1) {
		return fmt.Errorf("confidence: %v, want a number between 0 and 1 (e.g. 0.95)", e.Confidence)
	}
	if e.TrialTimeout < 0 || math.IsNaN(e.TrialTimeout) {
		return fmt.Errorf("trial_timeout: %v, want seconds ≥ 0 (0 means none)", e.TrialTimeout)
	}
	if err := CheckRange("trial_timeout", e.TrialTimeout, 0, MaxTrialTimeoutS); err != nil {
		return fmt.Errorf("%w seconds (0 means none)", err)
	}
	switch e.Stop {
	case "", StopFixed:
	case StopAuto:
		if e.MultiArm() {
			return fmt.Errorf(`stop: "auto" compares two builds, this experiment has %d: use "fixed"`, len(e.ArmKeys()))
		}
		if e.Order == OrderFixed {
			return errors.New(`stop: "auto" needs order "alternate" or "random": it analyses rounds as pairs`)
		}
	default:
		return fmt.Errorf(`stop: %q, want "fixed" or "auto"`, e.Stop)
	}
	if e.MaxTrials != 0 {
		if e.Stop != StopAuto {
			return errors.New(`max_trials: applies to "stop": "auto" only`)
		}
		if e.MaxTrials < 2 {
			return fmt.Errorf("max_trials: %d, want at least 2 per arm", e.MaxTrials)
		}
		if err := CheckRange("max_trials", e.MaxTrials, 2, MaxTrials); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i, m := range e.Metrics {
		if strings.TrimSpace(m) == "" || strings.ContainsAny(m, " \t=") {
			return fmt.Errorf("metrics[%d]: %q is not a metric name", i, m)
		}
		if seen[m] {
			return fmt.Errorf("metrics[%d]: %q listed twice", i, m)
		}
		seen[m] = true
	}
	switch e.Profiler {
	case "", "perf", "pprof":
	default:
		return fmt.Errorf("profiler: %q, want \"perf\" or \"pprof\"", e.Profiler)
	}
	if e.Primary != "" && len(e.Metrics) > 0 && !seen[e.Primary] {
		return fmt.Errorf("primary: %q is not one of metrics %q", e.Primary, e.Metrics)
	}
	if e.Primary != "" && (strings.TrimSpace(e.Primary) == "" || strings.ContainsAny(e.Primary, " \t=")) {
		return fmt.Errorf("primary: %q is not a metric name", e.Primary)
	}
	return e.Controls.Validate()
}

// validateArms checks that the builds are keyed by the arms: "control"
// and "treatment", or "A", "B", "C", ... for three or more builds.
func (e *Experiment) validateArms() error {
	keys := e.ArmKeys()
	want := `"control" and "treatment"`
	if len(keys) > 2 {
		want = fmt.Sprintf(`"A" (the base) to %q, one per build`, keys[len(keys)-1])
	}
	if len(e.Builds) > MaxArms {
		return fmt.Errorf("builds: %d builds, want at most %d", len(e.Builds), MaxArms)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Builds)) {
		if !slices.Contains(keys, k) {
			return fmt.Errorf(`builds.%s: unknown build (want %s, or a list of builds, the base first)`, k, want)
		}
	}
	for _, k := range keys {
		if _, ok := e.Builds[k]; !ok {
			return fmt.Errorf("builds.%s: missing", k)
		}
	}
	return nil
}

// Validate checks the controls that do not depend on the device.
func (c *Controls) Validate() error {
	if c.PinCPU != nil && *c.PinCPU < -1 {
		return fmt.Errorf("controls.pin_cpu: %d, want a CPU number or -1 (no pinning)", *c.PinCPU)
	}
	if c.PinCPU != nil {
		if err := CheckRange("controls.pin_cpu", *c.PinCPU, -1, MaxCPU); err != nil {
			return err
		}
	}
	switch c.Proxy {
	case "", "off", "record", "replay":
	default:
		return fmt.Errorf("controls.proxy: %q, want off, record or replay", c.Proxy)
	}
	for i, p := range c.Prepare {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("controls.prepare[%d]: empty command", i)
		}
	}
	for i, p := range c.Cleanup {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("controls.cleanup[%d]: empty command", i)
		}
	}
	return nil
}

// ASLROff reports whether the controls ask for address-space randomisation off.
func (c *Controls) ASLROff() bool { return c.ASLR != nil && !*c.ASLR }

// PinnedCPU returns the CPU to pin trials to, or -1 for none.
func (c *Controls) PinnedCPU() int {
	if c.PinCPU == nil {
		return -1
	}
	return *c.PinCPU
}

// jsonSyntaxError turns a decoding error into one with a line and column.
func jsonSyntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64 = -1
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		if strings.Contains(err.Error(), "EOF") {
			return errors.New("not a complete JSON object (file empty or cut short)")
		}
		return err
	}
	line, col := 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Errorf("line %d, column %d: %v", line, col, err)
}

// checkShape walks decoded JSON against the Go type t (following json tags)
// and reports the first unknown field or wrong type with its path.
func checkShape(path string, v any, t reflect.Type) error {
	name := path
	if name == "" {
		name = "experiment"
	}
	if v == nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			return nil
		}
		if t == reflect.TypeOf(json.RawMessage{}) {
			return nil
		}
		return fmt.Errorf("%s: null, want %s", name, describeType(t))
	}
	if t == reflect.TypeOf(json.RawMessage{}) {
		return nil // validated by whoever interprets it
	}
	if t.Kind() == reflect.Pointer {
		return checkShape(path, v, t.Elem())
	}
	wrong := func() error {
		return fmt.Errorf("%s: %s, want %s", name, describeValue(v), describeType(t))
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrong()
		}
		fields := jsonFields(t)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			f, ok := fields[k]
			if !ok {
				msg := fmt.Sprintf("%s: unknown field", join(path, k))
				if s := suggest(k, fields); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				return errors.New(msg)
			}
			if err := checkShape(join(path, k), obj[k], f.Type); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrong()
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if err := checkShape(join(path, k), obj[k], t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return wrong()
		}
		for i, x := range arr {
			if err := checkShape(fmt.Sprintf("%s[%d]", path, i), x, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return wrong()
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return wrong()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return wrong()
		}
		if _, err := n.Int64(); err != nil {
			f, ferr := strconv.ParseFloat(n.String(), 64)
			if (ferr == nil || errors.Is(ferr, strconv.ErrRange)) && f == math.Trunc(f) {
				// A whole number too big for the field: name its bound.
				if f > 0 {
					return fmt.Errorf("%s: %s is %w (max %s)", name, n, ErrTooLarge, maxOf(path, t))
				}
				return fmt.Errorf("%s: %s is %w", name, n, ErrTooSmall)
			}
			return fmt.Errorf("%s: %s is not a whole number", name, n)
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return wrong()
		}
		if _, err := strconv.ParseFloat(n.String(), 64); err != nil {
			return fmt.Errorf("%s: %s is %w (it does not fit a 64-bit float)", name, n, ErrTooLarge)
		}
	}
	return nil
}

// maxOf names the upper bound of an integer field, for values too large
// to decode at all.
func maxOf(path string, t reflect.Type) string {
	switch path {
	case "trials":
		return strconv.Itoa(MaxTrials)
	case "warmup":
		return strconv.Itoa(MaxWarmup)
	case "controls.pin_cpu":
		return strconv.Itoa(MaxCPU)
	}
	if t.Kind() == reflect.Int64 || t.Kind() == reflect.Int {
		return strconv.FormatInt(math.MaxInt64, 10)
	}
	return "the field's range"
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// jsonFields maps a struct's JSON names to its fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	m := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		m[name] = f
	}
	return m
}

// suggest returns the known field closest to k, if any is close.
func suggest(k string, fields map[string]reflect.StructField) string {
	best, bestD := "", 3
	for name := range fields {
		if d := editDistance(strings.ToLower(k), name); d < bestD || (d == bestD && name < best && best != "") {
			best, bestD = name, d
		}
	}
	return best
}

func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "a whole number"
	}
}

func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 30 {
			x = x[:30] + "…"
		}
		return fmt.Sprintf("string %q", x)
	case json.Number:
		return "number " + x.String()
	case bool:
		return fmt.Sprintf("%v", x)
	default:
		return jsonKind(v)
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
