//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "bench: the benchmark reads /proc and runs on Linux only")
	os.Exit(1)
}
