package bisect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/perflab/perflab/lab"
)

// LoadRange reads a bisect experiment file: an experiment file whose
// "builds" is a list, good first and bad last, instead of a control and a
// treatment. Every other field is the experiment's (device, controls,
// order, metrics, seed, threshold, ...) and is checked as perflab run
// checks it. A build may carry "rev" (shown in the result); a build without
// "name" is called "build N". Relative directories are resolved against
// the file's directory.
func LoadRange(path string) (*lab.Experiment, []Candidate, error) {
	data, base, err := lab.ReadExperimentFile(path)
	if err != nil {
		return nil, nil, err
	}
	exp, cands, err := ParseRange(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	m := map[string]lab.Build{}
	for i, c := range cands {
		m[strconv.Itoa(i)] = c.Build
	}
	tmp := lab.Experiment{Builds: m}
	tmp.ResolvePaths(base)
	for i := range cands {
		cands[i].Build = tmp.Builds[strconv.Itoa(i)]
	}
	return exp, cands, nil
}

// rangeBuild is a build of a list: a lab.Build with an optional rev.
type rangeBuild struct {
	lab.Build
	Rev string `json:"rev,omitempty"`
}

// ParseRange decodes a bisect experiment file (see LoadRange).
func ParseRange(data []byte) (*lab.Experiment, []Candidate, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		// ParseExperiment words syntax errors with their line.
		_, perr := lab.ParseExperiment(data)
		if perr == nil {
			perr = err
		}
		return nil, nil, perr
	}
	raw, ok := obj["builds"]
	if !ok {
		return nil, nil, errors.New(`builds: missing (want a list of builds, good first, bad last)`)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, errors.New(`builds: want a list of builds, good first and bad last (not a control and a treatment)`)
	}
	if len(list) < 2 {
		return nil, nil, fmt.Errorf("builds: %d builds, want at least 2 (good first, bad last)", len(list))
	}
	cands := make([]Candidate, len(list))
	for i, r := range list {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		var b rangeBuild
		if err := dec.Decode(&b); err != nil {
			return nil, nil, fmt.Errorf("builds[%d]: %w", i, err)
		}
		name := b.Name
		if name == "" {
			name = fmt.Sprintf("build %d", i)
		}
		cands[i] = Candidate{Name: name, Rev: b.Rev, Build: b.Build}
	}
	// Check the rest, and each build, as an experiment of two builds.
	for i := range list {
		pair, _ := json.Marshal(map[string]json.RawMessage{lab.ArmControl: list[0], lab.ArmTreatment: stripRev(list[i])})
		obj["builds"] = pair
		if i == 0 {
			obj["builds"], _ = json.Marshal(map[string]json.RawMessage{lab.ArmControl: stripRev(list[0]), lab.ArmTreatment: stripRev(list[0])})
		}
		doc, _ := json.Marshal(obj)
		exp, err := lab.ParseExperiment(doc)
		if err != nil {
			msg := strings.ReplaceAll(err.Error(), "builds.treatment", fmt.Sprintf("builds[%d]", i))
			return nil, nil, errors.New(strings.ReplaceAll(msg, "builds.control", "builds[0]"))
		}
		if i == len(list)-1 {
			exp.Builds = nil
			return exp, cands, nil
		}
	}
	return nil, nil, errors.New("unreachable")
}

// stripRev removes "rev" from a build object, for the experiment checks.
func stripRev(r json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(r, &m) != nil {
		return r
	}
	delete(m, "rev")
	out, _ := json.Marshal(m)
	return out
}
