package calls

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EnvFile names the environment variable with the file calls are appended
// to. Unset: Record does nothing.
const EnvFile = "GOPF_BENCH_CALLS"

// Call is one handler call.
type Call struct {
	// At is when the handler ran.
	At time.Time
	// Cause is "create", "update" or "delete".
	Cause string
}

var (
	once sync.Once
	file *os.File
)

// Record appends a call of a handler for cause to the file EnvFile names,
// if it names one: one write of one line, so that the lines of concurrent
// calls do not mix. Problems are reported on stderr and never stop the
// operator.
func Record(cause string) {
	once.Do(open)
	if file == nil {
		return
	}
	line := strconv.FormatInt(time.Now().UnixNano(), 10) + " " + cause + "\n"
	if _, err := file.WriteString(line); err != nil {
		fmt.Fprintln(os.Stderr, "calls:", err)
	}
}

func open() {
	path := os.Getenv(EnvFile)
	if path == "" {
		return
	}
	var err error
	if file, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "calls:", err)
	}
}

// Read returns the calls recorded in path, in the order they were written;
// none when there is no file.
func Read(path string) ([]Call, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Call
	s := bufio.NewScanner(f)
	for s.Scan() {
		at, cause, ok := strings.Cut(s.Text(), " ")
		ns, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("reading %s: bad line %q", path, s.Text())
		}
		out = append(out, Call{At: time.Unix(0, ns), Cause: cause})
	}
	return out, s.Err()
}
