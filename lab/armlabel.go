package lab

import "fmt"

// ArmLabel names an arm for tables: "control (feed v1)" when its build has
// a name (on sim, else its app and effect: "treatment (feed+5%)"), else
// the arm alone. Builds of a multi-build experiment, whose arms are the
// letters tables already show, are labelled by their name alone.
func (e *Experiment) ArmLabel(arm string) string {
	b := e.Builds[arm]
	name := b.Name
	if name == "" && b.App != "" {
		name = b.App
		if b.EffectPct != 0 {
			name += fmt.Sprintf("%+g%%", b.EffectPct)
		}
	}
	if name == "" || name == arm {
		return arm
	}
	if _, ok := ArmIndex(arm); ok && len(arm) == 1 {
		return name // "A", "B", ... are the tables' column letters already
	}
	return arm + " (" + name + ")"
}
