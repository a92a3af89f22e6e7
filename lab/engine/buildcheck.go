package engine

import (
	"errors"
	"fmt"

	"github.com/perflab/perflab/lab"
)

// checkBuilds asks every device that can tell without I/O
// (lab.BuildChecker) whether it can run the builds of exp, so a build a
// device cannot run is refused before the session file is created rather
// than at device setup, which would leave a session of a header only.
// Every device is asked; each error names its device.
func checkBuilds(devs []lab.Device, exp *lab.Experiment) error {
	var errs []error
	for _, d := range devs {
		c, ok := d.(lab.BuildChecker)
		if !ok {
			continue
		}
		if err := c.CheckBuilds(exp); err != nil {
			errs = append(errs, fmt.Errorf("device %s cannot run the builds: %w", d.Info().ID, err))
		}
	}
	return errors.Join(errs...)
}
