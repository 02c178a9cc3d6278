package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gopf-dev/gopf/handlers"
)

// FuzzReview feeds a validating and a mutating reviewer admission requests
// with any operation and any bytes as the object and the old object. The
// reviewer never panics and always answers: it allows, or it denies with a
// status code. A mutation's patch applies to the object the API server sent,
// as the API server applies it, and carries the handlers' changes. The
// handlers see the object as the API server reads it.
//
// Crashers the fuzzer found are kept in testdata/fuzz/FuzzReview.
func FuzzReview(f *testing.F) {
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect} {
		f.Add(string(op), configMap, configMap)
	}
	f.Add("CREATE", `{"apiVersion":"v1","kind":"ConfigMap","data":{"deny":"please"}}`, "")
	f.Add("CREATE", `{"apiVersion":"v1","kind":"ConfigMap","data":{"panic":"please"}}`, "")
	f.Add("UPDATE", `{"apiVersion":"v1","kind":"ConfigMap","data":{"fail":"please","drop":"x"}}`, `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1"}}`)
	f.Add("CREATE", `{"apiVersion":"v1","kind":"ConfigMap","data":null,"metadata":{"labels":{"gopf-mutated":"no"},"annotations":{"removed":"x"}}}`, "")
	f.Add("CREATE", `{"apiVersion":"v1","kind":"ConfigMap","data":{"mutated":"yes","unstructured":"u"},"metadata":{"labels":{"gopf-mutated":"yes"}}}`, "")
	f.Add("CREATE", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","creationTimestamp":"2026-01-02T03:04:05+01:00","generation":12345678901234567},"binaryData":{"b":"AAEC"},"immutable":true}`, "")
	f.Add("CREATE", `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1"},"data":{"b":"2"}}`, "")
	f.Add("CREATE", `{"apiVersion":"v1","kind":"ConfigMap","data":{"\u00e9\ud800":"\u2028"},"x":[1,2.50,-0,1e400]}`, "")
	f.Add("UPDATE", `{"apiVersion":"v1","kind":"ConfigMap","data":"not a map"}`, `[]`)
	f.Add("DELETE", ``, `{"apiVersion":"v1","kind":"ConfigMap","data":{"deny":"on delete"}}`)
	f.Add("CONNECT", `{"kind":"PodExecOptions"}`, ``)
	f.Add("", `null`, `null`)
	f.Add("create", `"a string"`, `1`)
	f.Add("UPDATE", `{}`, `{} trailing`)

	f.Fuzz(func(t *testing.T, op, object, oldObject string) {
		var saw []*corev1.ConfigMap // what the typed handlers were given
		reg := handlers.NewRegistry()
		handlers.OnValidate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
			saw = append(saw, cm.DeepCopy())
			a.Warn("validated")
			switch {
			case cm.Data["deny"] != "":
				return handlers.Deny(422, "denied: "+cm.Data["deny"])
			case cm.Data["fail"] != "":
				return errors.New("failed: " + cm.Data["fail"])
			case cm.Data["panic"] != "":
				panic(cm.Data["panic"])
			}
			return nil
		}, handlers.ID("validate"), handlers.Operations(admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect))
		handlers.OnMutate(reg, func(ctx context.Context, cm *corev1.ConfigMap, a *cmAdmission) error {
			saw = append(saw, cm.DeepCopy())
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data["mutated"] = "yes"
			delete(cm.Data, "drop")
			yes := "yes"
			a.Patch.SetLabel("gopf-mutated", &yes)
			a.Patch.SetAnnotation("removed", nil)
			return nil
		}, handlers.ID("mutate"))
		handlers.OnMutate(reg, func(ctx context.Context, u *unstructured.Unstructured, a *handlers.Admission[*unstructured.Unstructured]) error {
			return unstructured.SetNestedField(u.Object, "u", "data", "unstructured")
		}, handlers.ID("mutate-unstructured"), handlers.ForKind("", "v1", "ConfigMap"))

		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "uid-1", Operation: admissionv1.Operation(op), Name: "cm", Namespace: "ns",
			Object:    runtime.RawExtension{Raw: []byte(object)},
			OldObject: runtime.RawExtension{Raw: []byte(oldObject)},
		}}
		original := []byte(object)
		if op == string(admissionv1.Delete) {
			original = []byte(oldObject)
		}
		for _, mutating := range []bool{false, true} {
			saw = nil
			resp := reviewerFor(t, reg, mutating).Handle(context.Background(), req)
			if !resp.Allowed && (resp.Result == nil || resp.Result.Code == 0) {
				t.Fatalf("mutating %v: a denial without a code: %+v", mutating, resp.Result)
			}
			if err := resp.Complete(req); err != nil {
				t.Fatalf("mutating %v: the response cannot be sent: %v", mutating, err)
			}
			if _, err := json.Marshal(resp.AdmissionResponse); err != nil {
				t.Fatalf("mutating %v: the response cannot be sent: %v", mutating, err)
			}
			checkSawWhatTheAPIServerReads(t, saw, op, original)
			if !resp.Allowed {
				continue
			}
			if !mutating || (op != string(admissionv1.Create) && op != string(admissionv1.Update)) {
				if len(resp.Patches) > 0 {
					t.Fatalf("mutating %v, %q: a patch from handlers that cannot change the object: %v", mutating, op, resp.Patches)
				}
				continue
			}
			checkPatchApplies(t, original, resp.Patch)
		}
	})
}

// checkSawWhatTheAPIServerReads checks that each object a typed handler was
// given is original as the API server decodes it: case-sensitively.
func checkSawWhatTheAPIServerReads(t *testing.T, saw []*corev1.ConfigMap, op string, original []byte) {
	t.Helper()
	if len(saw) == 0 || op == string(admissionv1.Connect) {
		return
	}
	var want corev1.ConfigMap
	if err := utiljson.Unmarshal(original, &want); err != nil {
		t.Fatalf("a handler was called with an object the API server cannot read: %v\n%s", err, original)
	}
	// The first handler sees the object unchanged (later mutators see the
	// changes of earlier ones).
	if !reflect.DeepEqual(saw[0], &want) {
		t.Fatalf("the handler saw\n %+v\nthe API server reads\n %+v\nfrom %s", saw[0], &want, original)
	}
}

// checkPatchApplies applies an allowed mutation's JSON patch to the original
// as the API server does, and checks the result carries the mutators'
// changes.
func checkPatchApplies(t *testing.T, original, patch []byte) {
	t.Helper()
	patched := original
	if len(patch) > 0 {
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatalf("the patch cannot be decoded: %v\n%s", err, patch)
		}
		if patched, err = p.Apply(original); err != nil {
			t.Fatalf("the patch does not apply to the original: %v\noriginal %s\npatch %s", err, original, patch)
		}
	}
	var cm corev1.ConfigMap
	if err := utiljson.Unmarshal(patched, &cm); err != nil {
		t.Fatalf("the patched object cannot be read: %v\n%s", err, patched)
	}
	if cm.Data["mutated"] != "yes" || cm.Data["unstructured"] != "u" || cm.Labels["gopf-mutated"] != "yes" || cm.Annotations["removed"] != "" {
		t.Fatalf("the patched object lacks the mutators' changes:\noriginal %s\npatch %s\npatched %s", original, patch, patched)
	}
	if _, has := cm.Data["drop"]; has {
		t.Fatalf("the patched object keeps a field a mutator removed:\noriginal %s\npatch %s\npatched %s", original, patch, patched)
	}
}
