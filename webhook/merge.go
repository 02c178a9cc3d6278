package webhook

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/gopf-dev/gopf/internal/spec"
)

// applyChanges carries the changes a mutating handler made to its object,
// from before to after (both as the handler's Go type encodes them), over
// to doc, the object as the API server sent it. Everything in doc the
// handler did not change stays as it is, including fields the handler's Go
// type does not know and so could not even see: encoding a typed object
// and comparing it with the request would drop them.
func applyChanges(doc, before, after []byte) ([]byte, error) {
	var d, b, a any
	for _, x := range []struct {
		data []byte
		into *any
	}{{doc, &d}, {before, &b}, {after, &a}} {
		if err := decodeJSON(x.data, x.into); err != nil {
			return nil, err
		}
	}
	return json.Marshal(carry(d, b, a))
}

// carry returns doc with the changes from before to after.
func carry(doc, before, after any) any {
	if reflect.DeepEqual(before, after) {
		return doc
	}
	switch b := before.(type) {
	case map[string]any:
		a, okA := after.(map[string]any)
		d, okD := doc.(map[string]any)
		if !okA || !okD {
			return after
		}
		out := make(map[string]any, len(d))
		for k, v := range d {
			out[k] = v
		}
		for k, av := range a {
			bv, inBefore := b[k]
			dv, inDoc := d[k]
			switch {
			case !inBefore, !inDoc && !reflect.DeepEqual(bv, av):
				out[k] = av
			case inDoc:
				out[k] = carry(dv, bv, av)
			}
		}
		for k := range b {
			if _, inAfter := a[k]; !inAfter {
				delete(out, k)
			}
		}
		return out
	case []any:
		a, okA := after.([]any)
		d, okD := doc.([]any)
		if !okA || !okD || len(a) != len(b) || len(d) != len(b) {
			return after
		}
		out := make([]any, len(d))
		for i := range d {
			out[i] = carry(d[i], b[i], a[i])
		}
		return out
	}
	return after
}

// mergePatch applies a handler's Patch to the object obj (JSON) the way a
// JSON merge patch does; status entries go under "status".
func mergePatch(obj []byte, p *spec.Patch) ([]byte, error) {
	if p == nil || p.Empty() {
		return obj, nil
	}
	patch := map[string]any{}
	for k, v := range spec.ObjectPatch(p) {
		patch[k] = v
	}
	if st := spec.StatusPatch(p); len(st) > 0 {
		patch["status"] = st
	}
	raw, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	var doc, normal any
	if err := decodeJSON(obj, &doc); err != nil {
		return nil, err
	}
	if err := decodeJSON(raw, &normal); err != nil {
		return nil, err
	}
	return json.Marshal(merge(doc, normal))
}

// merge applies a JSON merge patch (RFC 7386) to doc.
func merge(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = merge(d[k], v)
	}
	return d
}

// decodeJSON decodes data keeping numbers exact.
func decodeJSON(data []byte, into *any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(into)
}
