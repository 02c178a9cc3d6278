/*
Package faults checks that a gopf operator keeps its promises while things
break: the operator is stopped in the middle of a handler, the API server
goes away or its watch streams go silent, requests fail in storms of 429s
and 500s, other clients write to the same objects, two operators compete
for the same objects, stored state is garbage, and many objects arrive at
once while requests fail.

The package itself is a fault-injecting HTTP proxy (Proxy) that sits
between an operator and the API server: the operator's rest.Config points
at the proxy, which forwards to the real API server with the credentials it
was started with. While a test runs, it can

  - fail a fraction of requests with a chosen status (429 with Retry-After,
    500, 409, ...), answered as the API server would, with a metav1.Status;
  - hold requests for a while before forwarding them;
  - take the API server away (every connection reset) and bring it back;
  - stall watch streams (the connection stays open, events are held back),
    then deliver what was held, or end the streams as a watch timeout does;
  - tell which requests it saw, when, and how they ended.

Random choices come from a seeded generator, so a run can be repeated.

The scenarios are the package's tests. They run against one envtest control
plane, each in its own namespace, and record what they measured; the table
in docs/reliability.md is checked against those records after every run
(so it cannot go stale), and rewritten with fresh figures by

	go test ./test/faults -run . -update

The load scenario creates GOPF_FAULTS_N objects (default 300); set it to
5000 for the figure the issue asks for (best without -race). The partition
scenario cuts the operator off for 30 s; set GOPF_FAULTS_PARTITION (a
duration, 30s or more) for a longer partition. With -short only the quick
scenarios run.
*/
package faults
