package client

import (
	"testing"
	"time"
)

func TestLogsQuery(t *testing.T) {
	at := time.UnixMilli(1700000000123)
	tests := []struct {
		opts LogsOptions
		want string
	}{
		{LogsOptions{}, ""},
		{LogsOptions{Cursor: at, Limit: 50, Direction: "forward", Level: "warn"}, "?cursor=1700000000123&direction=forward&level=warn&limit=50"},
		{LogsOptions{Direction: "backward"}, "?direction=backward"},
	}
	for _, tt := range tests {
		if got := tt.opts.query(); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.opts, got, tt.want)
		}
	}
}
