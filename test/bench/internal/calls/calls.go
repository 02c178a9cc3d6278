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
// to. Unset: Record and Run record nothing.
const EnvFile = "GOPF_BENCH_CALLS"

// EnvReplica names the environment variable with the name of the replica
// (the operator process) that records the calls, so that the calls of
// several replicas appended to one file tell which replica made each.
// Unset: the calls name no replica.
const EnvReplica = "GOPF_BENCH_REPLICA"

// Call is one handler call.
type Call struct {
	// At is when the handler began.
	At time.Time
	// Cause is "create", "update" or "delete" for change handlers; "timer",
	// "daemon" or "requeue" for periodic work (see package scenario).
	Cause string
	// Object is the name of the object handled; "" when not recorded.
	Object string
	// End is when the handler returned; zero when not recorded (Record).
	End time.Time
	// Replica is the replica that made the call (EnvReplica); "" when
	// not recorded.
	Replica string
}

var (
	once    sync.Once
	file    *os.File
	replica string
)

// Record appends a call of a handler for cause on object (the object's
// name, or "") to the file EnvFile names, if it names one: one write of one
// line, so that the lines of concurrent calls do not mix. Problems are
// reported on stderr and never stop the operator.
func Record(cause, object string) {
	write(Call{At: time.Now(), Cause: cause, Object: object})
}

// Run notes the start of a handler call for cause on object, for handlers
// whose end matters too (timers, daemons, a requeueing reconcile: the next
// run is due an interval after the end of the previous one). The call is
// recorded, with both times, when the function Run returns is called; not
// at all if it is never called.
func Run(cause, object string) (end func()) {
	start := time.Now()
	return func() { write(Call{At: start, Cause: cause, Object: object, End: time.Now()}) }
}

// write appends c, made by this process's replica, as a line: start,
// cause, object ("-" for none), end (0 for none), replica ("-" for none),
// times in Unix nanoseconds.
func write(c Call) {
	once.Do(open)
	if file == nil {
		return
	}
	object, end, rep := orDash(c.Object), int64(0), orDash(replica)
	if !c.End.IsZero() {
		end = c.End.UnixNano()
	}
	line := strconv.FormatInt(c.At.UnixNano(), 10) + " " + c.Cause + " " + object + " " + strconv.FormatInt(end, 10) + " " + rep + "\n"
	if _, err := file.WriteString(line); err != nil {
		fmt.Fprintln(os.Stderr, "calls:", err)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func open() {
	replica = os.Getenv(EnvReplica)
	path := os.Getenv(EnvFile)
	if path == "" {
		return
	}
	var err error
	if file, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "calls:", err)
	}
}

// Read returns the calls recorded in path, in the order they were written
// (Run's calls when they ended); none when there is no file.
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
		c, err := parse(s.Text())
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		out = append(out, c)
	}
	return out, s.Err()
}

// parse reads a line written by write (or by an older write, without the
// replica).
func parse(line string) (Call, error) {
	fields := strings.Fields(line)
	if len(fields) != 4 && len(fields) != 5 {
		return Call{}, fmt.Errorf("bad line %q", line)
	}
	at, err1 := strconv.ParseInt(fields[0], 10, 64)
	end, err2 := strconv.ParseInt(fields[3], 10, 64)
	if err1 != nil || err2 != nil {
		return Call{}, fmt.Errorf("bad line %q", line)
	}
	c := Call{At: time.Unix(0, at), Cause: fields[1]}
	if fields[2] != "-" {
		c.Object = fields[2]
	}
	if end != 0 {
		c.End = time.Unix(0, end)
	}
	if len(fields) == 5 && fields[4] != "-" {
		c.Replica = fields[4]
	}
	return c, nil
}
