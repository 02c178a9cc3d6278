//go:build race

package faults_test

// raceEnabled says whether the race detector is on, for the load figures.
const raceEnabled = true
