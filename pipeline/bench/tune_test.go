package bench

import (
	"testing"
)

func TestVerdict(t *testing.T) {
	st := func(min, med, max float64) Stat { return Stat{Min: min, Median: med, Max: max, N: 3} }
	quiet := Ratio{RequestsSec: st(0.99, 1, 1.01), CPUPerRequest: st(0.99, 1, 1.01)}
	for _, tc := range []struct {
		rps, cpu Stat
		want     string
	}{
		{st(1.05, 1.10, 1.20), st(0.90, 0.95, 1.01), "better"}, // faster every round, not costlier
		{st(0.97, 1.00, 1.04), st(0.80, 0.85, 0.90), "better"}, // cheaper every round, not slower
		{st(0.80, 0.85, 0.95), st(1.00, 1.05, 1.10), "worse"},
		{st(0.95, 1.00, 1.05), st(1.10, 1.20, 1.30), "worse"},
		{st(0.90, 1.02, 1.10), st(0.95, 1.00, 1.04), "noise"},
		{st(1.05, 1.10, 1.20), st(1.05, 1.10, 1.20), "noise"}, // faster but costlier: no verdict
		{st(1.01, 1.01, 1.015), st(0.99, 1.0, 1.0), "noise"},  // within the 2% floor
	} {
		if got := verdict(Ratio{RequestsSec: tc.rps, CPUPerRequest: tc.cpu}, quiet); got != tc.want {
			t.Errorf("verdict(rps %+v, cpu %+v) = %s, want %s", tc.rps, tc.cpu, got, tc.want)
		}
	}
	// A noisy control raises the floor: 10% faster is noise when the control moved 15%.
	noisy := Ratio{RequestsSec: st(0.85, 1, 1.15), CPUPerRequest: st(0.9, 1, 1.1)}
	if got := verdict(Ratio{RequestsSec: st(1.10, 1.12, 1.14), CPUPerRequest: st(0.95, 0.97, 0.99)}, noisy); got != "noise" {
		t.Errorf("verdict against a noisy control = %s, want noise", got)
	}
	one := Ratio{RequestsSec: Stat{Min: 2, Median: 2, Max: 2, N: 1}, CPUPerRequest: Stat{Min: .5, Median: .5, Max: .5, N: 1}}
	if got := verdict(one, quiet); got != "too few rounds" {
		t.Errorf("verdict from one round = %s", got)
	}
}
