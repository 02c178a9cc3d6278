package envtest

import "testing"

func TestResourceOfNamesResourceAndSubresource(t *testing.T) {
	cases := map[string]string{
		"/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x/status": "kopfexamples/status",
		"/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x":        "kopfexamples",
		"/apis/kopf.dev/v1/kopfexamples":                        "kopfexamples",
		"/api/v1/namespaces/ns/events":                          "events",
		"/api/v1/namespaces/ns":                                 "namespaces",
		"/api/v1/nodes/n1":                                      "nodes",
	}
	for path, want := range cases {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestWritesCountsOnlyChangingVerbs(t *testing.T) {
	var c RequestCounter
	c.add("GET", "kopfexamples", false)
	c.add("GET", "kopfexamples", true)
	c.add("PATCH", "kopfexamples", false)
	c.add("PATCH", "kopfexamples/status", false)
	c.add("POST", "events", false)
	c.add("PUT", "kopfexamplesets", false)
	c.add("POST", "selfsubjectrulesreviews", false)
	if got := c.Writes("kopfexamples", "kopfexamples/status"); got != 1 {
		t.Errorf("Writes(kopfexamples) = %d, want 1: the object's own writes, not its status's nor another resource's", got)
	}
	if got := c.Writes("kopfexamples", "kopfexamples/status") + c.Writes("kopfexamples/status"); got != 2 {
		t.Errorf("Writes(kopfexamples) + Writes(kopfexamples/status) = %d, want 2", got)
	}
	if got := c.Writes("kopfexamples", "kopfexamples/status", "kopfexamples"); got != 2 {
		t.Errorf("Writes(kopfexamples, kopfexamples/status, kopfexamples) = %d, want 2: each request once", got)
	}
	if got := c.Writes(); got != 4 {
		t.Errorf("Writes() = %d, want 4", got)
	}
	if got := c.Writes(""); got != 4 {
		t.Errorf(`Writes("") = %d, want 4`, got)
	}
	if got := c.Count("WATCH", "kopfexamples"); got != 1 {
		t.Errorf("Count(WATCH) = %d, want 1", got)
	}
}
