package member

import "testing"

func TestFitTrailingLogs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		current uint64
		lags    []uint64
		want    uint64
	}{
		{"no members behind", minTrailingLogs, nil, minTrailingLogs},
		{"a small lag fits the minimum plus twice the lag", minTrailingLogs, []uint64{100}, minTrailingLogs + 200},
		{"the slowest member counts", minTrailingLogs, []uint64{10, 50000, 300}, minTrailingLogs + 100000},
		{"never more than the cap", minTrailingLogs, []uint64{maxTrailingLogs}, maxTrailingLogs},
		{"down by halves", 400000, nil, 200000},
		{"down by halves, not below the minimum", minTrailingLogs + 1000, nil, minTrailingLogs},
		{"down to what the lag needs", 400000, []uint64{150000}, 316384},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fitTrailingLogs(tc.current, tc.lags); got != tc.want {
				t.Errorf("fitTrailingLogs(%d, %v) = %d, want %d", tc.current, tc.lags, got, tc.want)
			}
		})
	}
}
