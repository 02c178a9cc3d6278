package envtest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kopfv1 "github.com/gopf-dev/gopf/api/v1"
)

func TestDescribeProgressReadsGopfsStateWhereverItIsKept(t *testing.T) {
	inStatus := &kopfv1.KopfExample{}
	inStatus.Status.Extra = map[string]apiextensionsv1.JSON{
		"gopf": {Raw: []byte(`{"lastHandled":"{}","progress":{
			"wait":{"purpose":"create","retries":3,"delayed":"2030-01-01T00:00:00Z","message":"ConfigMap x does not exist yet"},
			"done":{"purpose":"create","retries":1,"success":true},
			"bad":{"purpose":"create","retries":1,"failure":true,"message":"fail once and for all"},
			"new":{"purpose":"create"}}}`)},
		"create_fn": {Raw: []byte(`{"progress":"a result that only looks like state"}`)},
	}
	inAnnotations := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		"mine.example.com/progress": `{"expire":{"purpose":"update","retries":1,"message":"no TTL"}}`,
		"other/progress":            "not JSON",
	}}}
	unstructuredStatus := &unstructured.Unstructured{Object: map[string]any{
		"status": map[string]any{"state": map[string]any{"progress": map[string]any{"h": map[string]any{"retries": 2.0, "message": "again"}}}},
	}}

	for name, tc := range map[string]struct {
		obj  client.Object
		want []string
	}{
		"status of a typed object": {inStatus, []string{
			"gopf's progress in status.gopf.progress:" +
				"\n  handler \"bad\" failed for good after 1 attempt: fail once and for all" +
				"\n  handler \"done\" succeeded" +
				"\n  handler \"new\" has not finished" +
				"\n  handler \"wait\": 3 attempts failed so far, the next at 2030-01-01T00:00:00Z; last error: ConfigMap x does not exist yet",
		}},
		"annotations with another prefix": {inAnnotations, []string{
			"gopf's progress in annotation mine.example.com/progress:\n  handler \"expire\": 1 attempt failed so far; last error: no TTL",
		}},
		"another status field of an unstructured object": {unstructuredStatus, []string{
			"gopf's progress in status.state.progress:\n  handler \"h\": 2 attempts failed so far; last error: again",
		}},
		"no state": {&corev1.ConfigMap{}, nil},
	} {
		got := describeProgress(tc.obj)
		if want := strings.Join(tc.want, "; "); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

func TestDescribeProgressShortensLongMessages(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		"gopf.dev/progress": `{"h":{"retries":1,"failure":true,"message":"` + strings.Repeat("é", 400) + `"}}`,
	}}}
	got := describeProgress(pod)
	if !strings.HasSuffix(got, "…") || len(got) > 700 {
		t.Errorf("describeProgress = %q (%d bytes), want the message cut short", got, len(got))
	}
	if !strings.Contains(got, strings.Repeat("é", 100)) || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("the message was not cut between characters: %q", got)
	}
}

func TestNamespacesAreNamedAfterTheirTest(t *testing.T) {
	for test, want := range map[string]string{
		"TestTheDaemonStops/deleted":       "thedaemonstops-deleted-",
		"an operator under Ginkgo handles": "an-operator-under-ginkgo-handles-",
		"Test":                             "test-",
		"TestAVeryLongNameThatGoesOnAndOnAndOnBeyondForty": "averylongnamethatgoesonandonandonbeyondf-",
	} {
		if got := namespacePrefix(test); got != want {
			t.Errorf("namespacePrefix(%q) = %q, want %q", test, got, want)
		}
	}
}
