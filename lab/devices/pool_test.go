package devices

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

func TestParseSelector(t *testing.T) {
	for _, c := range []struct {
		spec  string
		isSel bool
		err   string
		want  Selector
	}{
		{"adb:model=Pixel 3", true, "", Selector{"adb", "model", "Pixel 3"}},
		{" adb:model = Pixel_3 ", true, "", Selector{"adb", "model", "Pixel_3"}},
		{"adb:R58M123ABC", false, "", Selector{}},
		{"adb:127.0.0.1:6520", false, "", Selector{}},
		{"sim:pixel", false, "", Selector{}},
		{"adb:model=", true, "name the model", Selector{}},
		{"adb:serial=X", true, "unknown selector", Selector{}},
		{"sim:model=Pixel 3", true, "only adb has pool selectors", Selector{}},
	} {
		sel, isSel, err := ParseSelector(c.spec)
		if isSel != c.isSel || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: selector %v, err %v", c.spec, isSel, err)
			continue
		}
		if err == nil && isSel && sel != c.want {
			t.Errorf("%q: %+v", c.spec, sel)
		}
	}
	sel := Selector{"adb", "model", "pixel 3"}
	for _, c := range []struct {
		d    lab.DeviceInfo
		want bool
	}{
		{lab.DeviceInfo{Backend: "adb", Model: "Pixel_3", State: "device"}, true},
		{lab.DeviceInfo{Backend: "adb", Model: "Pixel 3", State: "offline"}, false},
		{lab.DeviceInfo{Backend: "adb", Model: "Pixel 3a", State: "device"}, false},
		{lab.DeviceInfo{Backend: "sim", Model: "Pixel 3", State: "device"}, false},
	} {
		if got := sel.Match(c.d); got != c.want {
			t.Errorf("match %+v = %v", c.d, got)
		}
	}
}

func TestResolveIDs(t *testing.T) {
	ids, err := Resolve(context.Background(), []string{"sim:pixel", "sim:pixel#2", "local"}, Options{})
	if err != nil || !reflect.DeepEqual(ids, []string{"sim:pixel", "sim:pixel#2", "local"}) {
		t.Fatalf("%v %v", ids, err)
	}
	if _, err := Resolve(context.Background(), []string{"sim:pixel", "sim:pixel"}, Options{}); err == nil {
		t.Error("a device named twice resolved")
	}
}

func TestSimInstances(t *testing.T) {
	d, err := Open(context.Background(), "sim:pixel#2", Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if id := d.Info().ID; id != "sim:pixel#2" {
		t.Errorf("ID %q", id)
	}
	for _, bad := range []string{"sim:pixel#1", "sim:pixel#x", "sim:nope#2"} {
		if _, err := Open(context.Background(), bad, Options{}); err == nil {
			t.Errorf("%s opened", bad)
		}
	}
}
