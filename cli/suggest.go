package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/perflab/perflab/lab"
)

// parseFlags is fs.Parse that follows an unknown flag's error with the
// nearest defined flag ("did you mean --headless?").
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if s := lab.Closest(name, names); s != "" {
		fmt.Fprintf(fs.Output(), "perflab %s: did you mean --%s?\n", fs.Name(), s)
	}
	return err
}
