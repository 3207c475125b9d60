package stats

import "testing"

func TestPercentileIsAnObservedSample(t *testing.T) {
	vs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.5, 5}, {0.95, 10}, {0.99, 10}, {1, 10}} {
		if got := Percentile(vs, tc.q); got != tc.want {
			t.Errorf("Percentile(q=%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("Percentile of nothing is not 0")
	}
}

func TestFloorTo(t *testing.T) {
	for _, tc := range []struct{ v, step, want int64 }{{10, 3, 9}, {9, 3, 9}, {0, 5, 0}, {-1, 5, -5}, {-5, 5, -5}} {
		if got := FloorTo(tc.v, tc.step); got != tc.want {
			t.Errorf("FloorTo(%d, %d) = %d, want %d", tc.v, tc.step, got, tc.want)
		}
	}
}
