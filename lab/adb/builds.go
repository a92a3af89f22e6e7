package adb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb/apk"
	"github.com/perflab/perflab/lab/shquote"
)

// The builds an adb device runs: APKs installed (and checked) per build.

// CheckBuilds says, without touching the phone, whether every build of exp
// names an app (lab.BuildChecker): a package and an activity, given or read
// from the APK's manifest. Setup makes the same check; whether the package
// is installed is only known there.
func (d *Device) CheckBuilds(exp *lab.Experiment) error {
	if CommandBuilds(exp) {
		return nil // a command for the phone's shell (commands.go)
	}
	for _, k := range slices.Sorted(maps.Keys(exp.Builds)) {
		if _, err := buildApp(k, exp.Builds[k]); err != nil {
			return err
		}
	}
	return nil
}

var _ lab.BuildChecker = (*Device)(nil)

// buildApp is the package and activity build key runs: its own fields, or
// its APK's manifest for those it leaves out.
func buildApp(key string, b lab.Build) (appBuild, error) {
	ab := appBuild{Package: b.Package, Activity: b.Activity}
	if b.APK != "" && (ab.Package == "" || ab.Activity == "") {
		m, err := apk.Read(b.APK)
		if err != nil {
			return ab, fmt.Errorf("builds.%s.apk: %w (or set \"package\" and \"activity\")", key, err)
		}
		if ab.Package == "" {
			ab.Package = m.Package
		}
		if ab.Activity == "" {
			ab.Activity = m.Launcher
		}
	}
	if ab.Package == "" {
		return ab, fmt.Errorf("builds.%s.package: empty; a build on an adb device is an Android app: set \"apk\", or \"package\" and \"activity\"", key)
	}
	if ab.Activity == "" {
		return ab, fmt.Errorf("builds.%s.activity: empty for %s: set \"activity\", e.g. \".MainActivity\"", key, ab.Package)
	}
	return ab, nil
}

// resolveBuild finds the package and activity a build runs, installing its
// APK if it has one.
func (d *Device) resolveBuild(ctx context.Context, key string, b lab.Build) (appBuild, error) {
	ab, err := buildApp(key, b)
	if err != nil {
		return ab, err
	}
	if b.APK != "" {
		if err := d.installAPK(ctx, key, b.APK); err != nil {
			return ab, fmt.Errorf("builds.%s.apk: %w", key, err)
		}
	}
	if _, err := d.c.Run(ctx, d.serial, "pm path "+shquote.Quote(ab.Package)); err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			return ab, fmt.Errorf("builds.%s: package %s is not installed on %s", key, ab.Package, d.serial)
		}
		return ab, err
	}
	return ab, nil
}

// installAPK pushes an APK and installs it with pm install -r.
func (d *Device) installAPK(ctx context.Context, key, apk string) error {
	f, err := os.Open(apk)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	remote := path.Join(TmpDir, "perflab-"+key+".apk")
	if err := d.c.Push(ctx, d.serial, f, remote, 0o644, st.ModTime()); err != nil {
		return err
	}
	if err := d.checkPushed(ctx, remote, st.Size()); err != nil {
		return err
	}
	out, err := d.c.Run(ctx, d.serial, "pm install -r -t "+shquote.Quote(remote))
	if err != nil || !strings.Contains(out, "Success") {
		return fmt.Errorf("pm install %s: %s %v", apk, strings.TrimSpace(out), err)
	}
	return nil
}

// checkPushed compares the size of a pushed file on the phone (sync LIST)
// with the size sent, so a truncated push is reported as such rather than
// as a corrupt APK by pm. A phone that cannot list the directory is taken
// at its word.
func (d *Device) checkPushed(ctx context.Context, remote string, size int64) error {
	fi, err := d.c.Stat(ctx, d.serial, remote)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("push %s: the file is not on the phone after the push", remote)
	case err != nil:
		return nil
	case fi.Size != size%(1<<32): // sync LIST sizes have 32 bits
		return fmt.Errorf("push %s: %d bytes arrived of %d", remote, fi.Size, size)
	}
	return nil
}
