//go:build linux

package bench

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAuditLogCountsEachRequestOnceWithItsResource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	//nolint:lll // an audit log: one JSON object a line
	lines := `{"auditID":"a","stage":"ResponseStarted","verb":"watch","requestURI":"/apis/kopf.dev/v1/kopfexamples?watch=true","user":{"username":"op"},"objectRef":{"resource":"kopfexamples"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:00.000001Z"}
{"auditID":"b","stage":"ResponseComplete","verb":"patch","requestURI":"/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x/status","user":{"username":"op"},"objectRef":{"resource":"kopfexamples","subresource":"status"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-01-01T00:00:01Z"}
{"auditID":"a","stage":"ResponseComplete","verb":"watch","requestURI":"/apis/kopf.dev/v1/kopfexamples?watch=true","user":{"username":"op"},"objectRef":{"resource":"kopfexamples"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:00.000001Z"}
{"auditID":"c","stage":"ResponseComplete","verb":"get","requestURI":"/apis?timeout=32s","user":{"username":"other"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:02Z"}
{"auditID":"d","stage":"ResponseComplete","verb":"get",`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAuditLog(path)
	if err := a.poll(); err != nil {
		t.Fatal(err)
	}
	op := a.of("op")
	if len(op) != 2 {
		t.Fatalf("got %d requests of op, want 2 (a watch logged twice counts once): %+v", len(op), op)
	}
	if op[0].verb != "watch" || op[0].resource != "kopfexamples" || op[0].isWrite() {
		t.Errorf("first request = %+v, want a watch of kopfexamples, not a write", op[0])
	}
	if op[1].resource != "kopfexamples/status" || !op[1].isWrite() || op[1].code != 409 {
		t.Errorf("second request = %+v, want a failed write to kopfexamples/status", op[1])
	}
	if other := a.of("other"); len(other) != 1 || other[0].resource != "/apis" {
		t.Errorf("requests of other = %+v, want one to /apis", other)
	}

	// The half-written last line is read once it is complete.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(`"requestURI":"/api","user":{"username":"other"},"requestReceivedTimestamp":"2026-01-01T00:00:03Z"}` + "\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.poll(); err != nil {
		t.Fatal(err)
	}
	if n := len(a.of("other")); n != 2 {
		t.Errorf("after the line was completed, other has %d requests, want 2", n)
	}
}

func TestReviewsAreRequestsNotWrites(t *testing.T) {
	for _, r := range []request{
		{verb: "create", resource: "selfsubjectrulesreviews"},
		{verb: "create", resource: "subjectaccessreviews"},
		{verb: "create", resource: "tokenreviews"},
	} {
		if r.isWrite() {
			t.Errorf("%+v counts as a write; a review stores nothing", r)
		}
	}
	if !(request{verb: "create", resource: "kopfexamples"}).isWrite() {
		t.Error("creating a KopfExample is not counted as a write")
	}
}
