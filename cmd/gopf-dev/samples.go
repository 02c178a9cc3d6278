//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// callTimeout bounds each API call gopf-dev makes itself.
const callTimeout = 10 * time.Second

// isManifest reports whether a file name is one of the objects to create:
// a YAML or JSON file that is not kustomize's kustomization file.
func isManifest(name string) bool {
	base := strings.ToLower(filepath.Base(name))
	switch filepath.Ext(base) {
	case ".yaml", ".yml", ".json":
	default:
		return false
	}
	return strings.TrimSuffix(base, filepath.Ext(base)) != "kustomization"
}

// manifestFiles lists the manifest files directly in dir, sorted by name.
func manifestFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && isManifest(e.Name()) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(files)
	return files, nil
}

// parseManifests splits data into its YAML (or JSON) documents and returns
// each one that is not empty as an object. Every object needs apiVersion,
// kind and metadata.name.
func parseManifests(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue // only comments, or nothing at all
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("document %d: apiVersion, kind and metadata.name are all needed", i)
		}
		objs = append(objs, obj)
	}
}

// applySamples creates every object of the manifest files in dir, in
// namespace "default" unless one is named, and leaves alone those that
// already exist. It returns the objects; dir "" means none.
func applySamples(c client.Client, dir string) ([]*unstructured.Unstructured, error) {
	if dir == "" {
		return nil, nil
	}
	files, err := manifestFiles(dir)
	if err != nil {
		return nil, err
	}
	var all []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := parseManifests(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, obj := range objs {
			if err := createObject(c, obj); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
		}
		all = append(all, objs...)
	}
	return all, nil
}

// createObject creates obj, defaulting its namespace if its kind is
// namespaced; an object that already exists is left as it is.
func createObject(c client.Client, obj *unstructured.Unstructured) error {
	namespaced, err := c.IsObjectNamespaced(obj)
	if err != nil {
		return fmt.Errorf("%s %s: %w (is its CRD in --crds?)", obj.GetKind(), obj.GetName(), err)
	}
	if namespaced && obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	err = c.Create(ctx, obj)
	switch {
	case err == nil:
		say("created %s", describe(obj))
	case apierrors.IsAlreadyExists(err):
		say("%s exists already; left as it is", describe(obj))
	default:
		return fmt.Errorf("creating %s: %w", describe(obj), err)
	}
	return nil
}

// describe names an object as "Kind namespace/name" (or "Kind name").
func describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if obj.GetNamespace() == "" {
		return kind + " " + obj.GetName()
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// statusWatcher prints the status of objects whenever it changes.
type statusWatcher struct {
	c    client.Reader
	objs []*unstructured.Unstructured
	last map[string]string // object → last line printed for it
}

// poll reads each object once and prints a line for each whose status
// (or readability) has changed since the last poll.
func (w *statusWatcher) poll() {
	for _, obj := range w.objs {
		key := describe(obj)
		line := w.read(obj)
		prev, ok := w.last[key]
		if !ok {
			prev = noStatus
		}
		if line != prev {
			w.last[key] = line
			fmt.Printf("%s %s\n", key, line)
		}
	}
}

// read returns the line to print for the object's current state.
func (w *statusWatcher) read(obj *unstructured.Unstructured) string {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	err := w.c.Get(ctx, client.ObjectKeyFromObject(obj), cur)
	switch {
	case apierrors.IsNotFound(err):
		return "is gone"
	case err != nil:
		return "cannot be read: " + err.Error()
	}
	return statusLine(cur)
}

// noStatus is statusLine's result for an object without status. It counts
// as printed already, so that a new object shows up once it has a status.
const noStatus = "status: {}"

// statusLine renders the object's status as compact JSON with sorted keys.
func statusLine(obj *unstructured.Unstructured) string {
	status, ok := obj.Object["status"]
	if !ok || status == nil {
		return noStatus
	}
	b, err := json.Marshal(status)
	if err != nil {
		return "status cannot be shown: " + err.Error()
	}
	return "status: " + string(b)
}
