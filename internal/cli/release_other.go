//go:build !linux

package cli

import "errors"

// releaseBinaryPages needs Linux's MADV_PAGEOUT.
func releaseBinaryPages() (int64, error) {
	return 0, errors.New("releasing a binary's pages needs Linux")
}
