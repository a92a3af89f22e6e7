package tui

import (
	"encoding/json"
	"fmt"
	"os"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
)

// recentBuild is one recently used build, remembered per backend.
type recentBuild struct {
	Backend string    `json:"backend"`
	Label   string    `json:"label"`
	Build   lab.Build `json:"build"`
}

// maxRecent bounds the recent-builds list.
const maxRecent = 12

// loadRecent reads the recent-builds file; a missing file is an empty list.
func loadRecent(path string) ([]recentBuild, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rs []recentBuild
	if err := json.Unmarshal(data, &rs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

// addRecent puts the given builds first, dropping older duplicates.
func addRecent(rs []recentBuild, add ...recentBuild) []recentBuild {
	out := append([]recentBuild(nil), add...)
	for _, r := range rs {
		dup := false
		for _, a := range add {
			if a.Backend == r.Backend && sameBuild(a.Build, r.Build) {
				dup = true
			}
		}
		if !dup {
			out = append(out, r)
		}
	}
	if len(out) > maxRecent {
		out = out[:maxRecent]
	}
	return out
}

func sameBuild(a, b lab.Build) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// saveRecent writes the list atomically off the Update path.
func saveRecent(path string, rs []recentBuild) tea.Cmd { return saveJSON(path, "recent builds", rs) }
