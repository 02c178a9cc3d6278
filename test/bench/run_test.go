//go:build linux

package bench

import (
	"slices"
	"testing"
)

// places returns where each operator runs in each round: operator name →
// the places (from 1), in round order.
func places(rounds int) map[string][]int {
	got := map[string][]int{}
	for round := 1; round <= rounds; round++ {
		for i, op := range roundOrder(Operators, round, rounds) {
			got[op.Name] = append(got[op.Name], i+1)
		}
	}
	return got
}

func TestEveryOperatorRunsOnceInEveryPlaceOverAsManyRoundsAsOperators(t *testing.T) {
	every := make([]int, len(Operators))
	for i := range every {
		every[i] = i + 1
	}
	for name, p := range places(len(Operators)) {
		slices.Sort(p)
		if !slices.Equal(p, every) {
			t.Errorf("%s runs in places %v over %d rounds, want each place once", name, p, len(Operators))
		}
	}
}

func TestTwoRoundsRunTheOperatorsInOppositeOrders(t *testing.T) {
	got := places(2)
	for name, p := range got {
		if p[0]+p[1] != len(Operators)+1 {
			t.Errorf("%s runs in places %v, want opposite places", name, p)
		}
	}
	if got[Gopf.Name][0] != len(Operators) || got[Gopf.Name][1] != 1 {
		t.Errorf("gopf runs in places %v, want last, then first", got[Gopf.Name])
	}
}

func TestOneRoundRunsTheOperatorsInTheirOrder(t *testing.T) {
	got := roundOrder(Operators, 1, 1)
	if !slices.EqualFunc(got, Operators, func(a, b Operator) bool { return a.Name == b.Name }) {
		t.Errorf("one round runs %v, want %v", got, Operators)
	}
}

func TestTwoRoundsRunGopfBeforeAndAfterTheTunedBaseline(t *testing.T) {
	got := places(2)
	tuned, gopf := got[BaselineTuned.Name], got[Gopf.Name]
	if (tuned[0] < gopf[0]) == (tuned[1] < gopf[1]) {
		t.Errorf("the tuned baseline runs in places %v, gopf in %v: want gopf after it once and before it once", tuned, gopf)
	}
}

func TestOperatorsLeftOutDoNotRun(t *testing.T) {
	o := Options{Operators: []string{BaselineTuned.Name, Gopf.Name}}
	got := o.operators(Basic)
	if len(got) != 2 || got[0].Name != BaselineTuned.Name || got[1].Name != Gopf.Name {
		t.Errorf("basic runs %v, want baseline-tuned and gopf", got)
	}
	if len(Operators) != 4 {
		t.Errorf("leaving operators out changed Operators: %v", Operators)
	}
	if got := o.operators(Periodic); len(got) != 1 || got[0].Name != Gopf.Name {
		t.Errorf("periodic (baseline and gopf) runs %v, want gopf alone", got)
	}
	if err := checkOperators([]string{"gopf", "tuned"}); err == nil {
		t.Error("an unknown operator: no error")
	}
}
