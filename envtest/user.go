package envtest

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// UserWith returns the configuration of a user who may do what rules grant
// and nothing else: a ClusterRole of rules bound to a user of its own name,
// whom the control plane's administrator impersonates. Both are deleted
// when the test ends. It is for tests of an operator under the permissions
// its RBAC grants: run the operator (or a manager of your own) with it.
func (e *Env) UserWith(rules ...rbacv1.PolicyRule) *rest.Config {
	e.t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "gopf-envtest-user-"}, Rules: rules}
	if err := e.Client.Create(e.Ctx, role); err != nil {
		e.t.Fatalf("envtest: creating the user's ClusterRole: %v", err)
		return nil
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: role.Name}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
	}
	e.t.Cleanup(func() { _ = e.Client.Delete(context.Background(), role) })
	if err := e.Client.Create(e.Ctx, binding); err != nil {
		e.t.Fatalf("envtest: binding the user's ClusterRole: %v", err)
		return nil
	}
	e.t.Cleanup(func() { _ = e.Client.Delete(context.Background(), binding) })
	user := rest.CopyConfig(e.ControlPlane.Config)
	user.Impersonate = rest.ImpersonationConfig{UserName: role.Name}
	return user
}
