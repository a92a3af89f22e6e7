package adb

import (
	"context"
	"errors"
	"testing"

	"github.com/perflab/perflab/internal/checktest"
	"github.com/perflab/perflab/lab"
)

// Through an adb server on another host without a tunnel only am start
// -W's metrics come back: CheckMetrics refuses any other, with the error
// Setup gives, before either touches the phone (the server's address is a
// documentation one, never dialled). Through a local server an app may
// report any metric.
func TestCheckMetricsMatchesSetup(t *testing.T) {
	remote := &Device{c: NewClient("192.0.2.7:5037"), serial: "emulator-5554"}
	local := &Device{c: NewClient("127.0.0.1:5037"), serial: "emulator-5554"}
	tests := []struct {
		name    string
		metrics []string
		want    string // "" for metrics the phone gives
	}{
		{"am start", []string{MetricWaitTime, MetricTotalTime}, ""},
		{"none", nil, ""},
		{"app's own", []string{MetricTotalTime, "startup_ms"}, `metrics[1]: "startup_ms" is not measured here (known: [total_time_ms wait_time_ms]): the app's own metrics over adb reverse: adb server 192.0.2.7:5037 is on another host`},
	}
	for _, tt := range tests {
		exp := &lab.Experiment{Metrics: tt.metrics}
		if err := local.CheckMetrics(exp); err != nil {
			t.Errorf("%s through a local server: %v", tt.name, err)
		}
		cerr := remote.CheckMetrics(exp)
		if tt.want == "" {
			if cerr != nil {
				t.Errorf("%s: %v", tt.name, cerr)
			}
			continue // Setup would go on to the phone
		}
		if !errors.Is(cerr, ErrRemoteReverse) {
			t.Errorf("%s: %v is not ErrRemoteReverse", tt.name, cerr)
		}
		_, serr := remote.Setup(context.Background(), exp)
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
	}
}
