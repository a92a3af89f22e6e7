package engine

import (
	"errors"
	"fmt"

	"github.com/perflab/perflab/lab"
)

// checkDevices asks every device that can tell without I/O whether it can
// run the builds of exp (lab.BuildChecker), give the metrics it asks for
// (lab.MetricChecker) and apply its controls (lab.ControlsChecker), so such
// an experiment is refused before the session file is created rather than
// at device setup or the first trial, which would leave a session of a
// header only. Every device is asked; each error names its device.
func checkDevices(devs []lab.Device, exp *lab.Experiment) error {
	var errs []error
	for _, d := range devs {
		if c, ok := d.(lab.BuildChecker); ok {
			if err := c.CheckBuilds(exp); err != nil {
				errs = append(errs, fmt.Errorf("device %s cannot run the builds: %w", d.Info().ID, err))
			}
		}
		if c, ok := d.(lab.MetricChecker); ok {
			if err := c.CheckMetrics(exp); err != nil {
				errs = append(errs, fmt.Errorf("device %s cannot measure the metrics: %w", d.Info().ID, err))
			}
		}
		if c, ok := d.(lab.ControlsChecker); ok {
			if err := c.CheckControls(exp); err != nil {
				errs = append(errs, fmt.Errorf("device %s cannot apply the controls: %w", d.Info().ID, err))
			}
		}
	}
	return errors.Join(errs...)
}
