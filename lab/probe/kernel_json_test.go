package probe

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/probe/kernel"
)

// The phone program writes kernel.Sample and perflab reads lab.ProbeSample:
// their JSON forms must stay the same.
func TestKernelSampleJSONMatchesProbeSample(t *testing.T) {
	tests := []lab.ProbeSample{
		{T: 1, MFLOPS: 8123.4, FreqKHz: []int{1766400, 2803200}, TempC: 41.2},
		{T: 2.5, MFLOPS: 10},
	}
	for _, s := range tests {
		want, _ := json.Marshal(s)
		got, _ := json.Marshal(kernel.Sample(s))
		if !bytes.Equal(got, want) {
			t.Errorf("kernel.Sample JSON %s, lab.ProbeSample JSON %s", got, want)
		}
		var buf bytes.Buffer
		if err := WriteSample(&buf, s); err != nil || buf.String() != string(want)+"\n" {
			t.Errorf("WriteSample = %q, %v", buf.String(), err)
		}
	}
}
