package lab

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"elapses", context.Background(), time.Millisecond, nil},
		{"zero", context.Background(), 0, nil},
		{"cancelled before", cancelled, time.Hour, context.Canceled},
		{"zero but cancelled", cancelled, 0, context.Canceled},
	}
	for _, tt := range tests {
		if err := Sleep(tt.ctx, tt.d); !errors.Is(err, tt.want) {
			t.Errorf("%s: Sleep = %v, want %v", tt.name, err, tt.want)
		}
	}
}
