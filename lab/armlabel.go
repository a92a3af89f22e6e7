package lab

import "fmt"

// ArmLabel names an arm for tables: "control (feed v1)" when its build has
// a name (on sim, else its app and effect: "treatment (feed+5%)"), else
// the arm alone.
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
	return arm + " (" + name + ")"
}
