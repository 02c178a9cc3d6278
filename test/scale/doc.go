// Package scale measures gopf at sizes too large for `make test`: many
// objects with a timer each, for the memory per object and the timers'
// lateness. Run it with GOPF_SCALE=<objects> (e.g. 10000); it writes its
// figures to docs/timers-scale.md.
package scale
