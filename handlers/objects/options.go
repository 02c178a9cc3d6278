package objects

import (
	"errors"
	"strings"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

// childDraft is what the options of Adopt and the other children helpers
// ask for, with what they could not accept.
type childDraft struct {
	forced, strict       bool
	nested               [][]string
	nestedSet            bool
	notController        bool
	noBlockOwnerDeletion bool
	problems             []string
}

// childSetting is what every option value of the children helpers holds.
type childSetting struct{ apply func(*childDraft) }

func (s childSetting) applyToChild(d *childDraft) { s.apply(d) }

// AdoptOption configures Adopt and AdoptAll: Forced, Strict, Nested.
type AdoptOption interface {
	applyToChild(*childDraft)
	adoptOption()
}

// LabelOption configures Label: Forced, Nested.
type LabelOption interface {
	applyToChild(*childDraft)
	labelOption()
}

// NamingOption configures HarmonizeNaming: Forced, Strict.
type NamingOption interface {
	applyToChild(*childDraft)
	namingOption()
}

// NamespaceOption configures AdjustNamespace: Forced.
type NamespaceOption interface {
	applyToChild(*childDraft)
	namespaceOption()
}

// OwnerReferenceOption configures OwnerReference: NotController,
// NoBlockOwnerDeletion.
type OwnerReferenceOption interface {
	applyToChild(*childDraft)
	ownerReferenceOption()
}

// AppendOption configures AppendOwnerReference: Forced, NotController,
// NoBlockOwnerDeletion.
type AppendOption interface {
	applyToChild(*childDraft)
	appendOption()
}

// ForcedSetting is the value of Forced.
type ForcedSetting struct{ childSetting }

func (ForcedSetting) adoptOption()     {}
func (ForcedSetting) labelOption()     {}
func (ForcedSetting) namingOption()    {}
func (ForcedSetting) namespaceOption() {}
func (ForcedSetting) appendOption()    {}

// Forced is Kopf's forced=True: what the child already has is overwritten
// instead of kept. Labels take the given values even where the child sets
// its own; the name (or generateName) and the namespace are replaced even
// when the child has one. For Adopt and AppendOwnerReference, where Kopf
// would add a second controller reference (which the API server refuses),
// Forced takes the child over: another owner's controller reference stays
// as a plain owner reference, and the new one is the controller.
func Forced() ForcedSetting {
	return ForcedSetting{childSetting{func(d *childDraft) { d.forced = true }}}
}

// StrictSetting is the value of Strict.
type StrictSetting struct{ childSetting }

func (StrictSetting) adoptOption()  {}
func (StrictSetting) namingOption() {}

// Strict is Kopf's strict=True for naming: the child is named exactly the
// given name (the owner's, for Adopt) instead of getting it as a
// generateName prefix "<name>-" that the API server completes. Use it when
// other objects refer to the child by a name known in advance; a second
// child of the same kind then collides with the first (AlreadyExists).
func Strict() StrictSetting {
	return StrictSetting{childSetting{func(d *childDraft) { d.strict = true }}}
}

// NestedSetting is the value of Nested.
type NestedSetting struct{ childSetting }

func (NestedSetting) adoptOption() {}
func (NestedSetting) labelOption() {}

// Nested is Kopf's nested=: the labels also go into the metadata of the
// objects at these paths inside the child, such as "spec.template" (a pod
// template). A path is a handlers.FieldPath: dotted, or keys one by one
// ([]string{"spec", "template"}) for keys with dots. A path the child does
// not have is skipped; one that reaches something other than an object is
// an error, as is an empty path or segment.
//
// The paths replace Adopt's default ones (spec.template and
// spec.jobTemplate.spec.template); Nested() with no paths labels the child
// alone. Several Nested options add up, so paths of both handlers.FieldPath
// forms can be given.
func Nested[P handlers.FieldPath](paths ...P) NestedSetting {
	keys := make([][]string, 0, len(paths))
	var problems []string
	for _, p := range paths {
		k, problem := spec.FieldKeys(p)
		if problem != "" {
			problems = append(problems, "nested "+problem)
		}
		keys = append(keys, k)
	}
	return NestedSetting{childSetting{func(d *childDraft) {
		if !d.nestedSet {
			d.nested, d.nestedSet = nil, true
		}
		d.nested = append(d.nested, keys...)
		d.problems = append(d.problems, problems...)
	}}}
}

// OwnerReferenceSetting is the value of NotController and
// NoBlockOwnerDeletion.
type OwnerReferenceSetting struct{ childSetting }

func (OwnerReferenceSetting) ownerReferenceOption() {}
func (OwnerReferenceSetting) appendOption()         {}

// NotController makes an owner reference a plain one (Kopf's
// controller=False): the owner owns the child for garbage collection, but
// does not control it, so the child can also have a controller.
func NotController() OwnerReferenceSetting {
	return OwnerReferenceSetting{childSetting{func(d *childDraft) { d.notController = true }}}
}

// NoBlockOwnerDeletion leaves blockOwnerDeletion unset on an owner
// reference (Kopf's block_owner_deletion=False): a foreground deletion of
// the owner then does not wait for the child, and creating the child needs
// no update permission on the owner's finalizers.
func NoBlockOwnerDeletion() OwnerReferenceSetting {
	return OwnerReferenceSetting{childSetting{func(d *childDraft) { d.noBlockOwnerDeletion = true }}}
}

// childOptions applies opts; nil options are skipped.
func childOptions[O interface{ applyToChild(*childDraft) }](opts []O) (*childDraft, error) {
	d := &childDraft{}
	for _, o := range opts {
		if any(o) == nil {
			continue
		}
		o.applyToChild(d)
	}
	if len(d.problems) > 0 {
		return nil, errors.New(strings.Join(d.problems, "; "))
	}
	return d, nil
}
