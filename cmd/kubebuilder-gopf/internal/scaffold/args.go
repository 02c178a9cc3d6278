package scaffold

import (
	"strconv"
	"strings"
)

// flagValues are the user's command-line flags as kubebuilder forwards
// them: name (without dashes) → value, bareFlag for a flag given without one.
type flagValues map[string]string

// bareFlag is the value of a flag given without one, as in "--force".
const bareFlag = "true"

// parseArgs reads "--name value", "--name=value" and bare "--name" tokens.
// A bare flag followed by another flag is a boolean set to true.
// Kubebuilder forwards only flags and their values, so anything else is
// ignored.
func parseArgs(args []string) flagValues {
	f := flagValues{}
	for i := 0; i < len(args); i++ {
		tok := args[i]
		if !strings.HasPrefix(tok, "-") {
			continue
		}
		name := strings.TrimLeft(tok, "-")
		if n, v, ok := strings.Cut(name, "="); ok {
			f[n] = v
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			f[name] = args[i+1]
			i++
			continue
		}
		f[name] = bareFlag
	}
	return f
}

// has reports whether the flag was given.
func (f flagValues) has(name string) bool {
	_, ok := f[name]
	return ok
}

// bool returns a boolean flag's value: false when absent or unparsable.
func (f flagValues) bool(name string) bool {
	v, ok := f[name]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b
}
