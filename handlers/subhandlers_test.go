package handlers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gopf-dev/gopf/handlers"
	"github.com/gopf-dev/gopf/internal/spec"
)

// executing returns a Cause of the handler "parent" whose Execute is
// answered by out, and the sub-handlers the engine was given.
func executing(out spec.SubsOutcome) (*handlers.Cause, *handlers.Extras, *[][]string) {
	given := &[][]string{}
	x := &handlers.Extras{SubsAllowed: true}
	x.Execute = func(ctx context.Context, subs []*spec.Handler[*handlers.Cause]) spec.SubsOutcome {
		var ids []string
		for _, h := range subs {
			ids = append(ids, h.Options.ID)
		}
		*given = append(*given, ids)
		return out
	}
	return handlers.CauseWith(handlers.NewRegistry(), "parent", x), x, given
}

func nop(ctx context.Context, c *handlers.Cause) (any, error) { return nil, nil }

func TestExecuteHandsTheSubHandlersToTheEngineInOrderUnderTheParentsID(t *testing.T) {
	c, _, given := executing(spec.SubsOutcome{})
	err := c.Execute(context.Background(), handlers.Sub("b", nop), handlers.Sub("a", nop, handlers.Retries(2)), handlers.Sub("c", nop))
	if err != nil {
		t.Fatalf("Execute = %v, want nil when all are done", err)
	}
	if got := strings.Join((*given)[0], " "); len(*given) != 1 || got != "parent/b parent/a parent/c" {
		t.Errorf("the engine got %v, want parent/b parent/a parent/c", *given)
	}
}

func TestExecuteOfUnfinishedSubHandlersAsksForTheParentToBeCalledWhenTheFirstIsDue(t *testing.T) {
	c, _, _ := executing(spec.SubsOutcome{Unfinished: []string{"parent/a", "parent/c"}, Due: 3 * time.Second})
	err := c.Execute(context.Background(), handlers.Sub("a", nop), handlers.Sub("b", nop), handlers.Sub("c", nop))
	var temp *handlers.TemporaryError
	if !errors.As(err, &temp) || !errors.Is(err, handlers.ErrSubHandlersUnfinished) || temp.Delay != 3*time.Second {
		t.Fatalf("Execute = %#v, want a TemporaryError of 3s wrapping ErrSubHandlersUnfinished", err)
	}
	if !strings.Contains(err.Error(), "parent/a, parent/c") {
		t.Errorf("error %q does not name the unfinished sub-handlers", err)
	}
	c, _, _ = executing(spec.SubsOutcome{Unfinished: []string{"parent/a"}})
	if err := c.Execute(context.Background(), handlers.Sub("a", nop)); !errors.As(err, &temp) || temp.Delay <= 0 {
		t.Errorf("Execute = %v, want a positive delay (zero would be the default backoff)", err)
	}
}

func TestExecuteOfFailedSubHandlersIsAPermanentErrorNamingThem(t *testing.T) {
	c, _, _ := executing(spec.SubsOutcome{Failed: []spec.SubFailure{{ID: "parent/b", Message: "broken"}}})
	err := c.Execute(context.Background(), handlers.Sub("a", nop), handlers.Sub("b", nop))
	var perm *handlers.PermanentError
	if !errors.As(err, &perm) || !errors.Is(err, handlers.ErrSubHandlerFailed) || !strings.Contains(err.Error(), "parent/b: broken") {
		t.Fatalf("Execute = %v, want a PermanentError wrapping ErrSubHandlerFailed naming parent/b", err)
	}
}

func TestExecuteRefusesBadSubHandlersAndRunsNoneOfThem(t *testing.T) {
	c, x, given := executing(spec.SubsOutcome{})
	c.Register("registered", nop)
	if err := c.Execute(context.Background(), handlers.Sub("once", nop)); err != nil {
		t.Fatal(err)
	}
	err := c.Execute(context.Background(),
		handlers.Sub("fine", nop),
		handlers.Sub("", nop),
		handlers.Sub("nil", nil),
		handlers.Sub("twice", nop), handlers.Sub("twice", nop),
		handlers.Sub("once", nop),       // given to an earlier Execute
		handlers.Sub("registered", nop), // registered with Register
		handlers.Sub("opts", nop, handlers.Retries(0)),
	)
	var perm *handlers.PermanentError
	if !errors.As(err, &perm) {
		t.Fatalf("Execute = %v, want a PermanentError", err)
	}
	for _, want := range []string{"empty id", `"parent/nil" is nil`, `"parent/twice" is registered twice`, `"parent/once" is registered twice`,
		`"parent/registered" is registered twice`, "Retries must be positive", "subhandlers_test.go:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
	if len(*given) != 1 {
		t.Errorf("the engine got %v; want only the first Execute", *given)
	}
	c.Register("once", nop)
	if err := x.SubErr(); err == nil || !strings.Contains(err.Error(), `"parent/once" is registered twice`) {
		t.Errorf("Register after Execute of the same id: %v", err)
	}
}

func TestExecuteWithoutSubHandlersRunsTheRegisteredOnesNowAndOnlyNow(t *testing.T) {
	c, x, given := executing(spec.SubsOutcome{})
	c.Register("a", nop)
	c.Register("b", nop)
	if err := c.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(*given) != 1 || strings.Join((*given)[0], " ") != "parent/a parent/b" {
		t.Errorf("the engine got %v, want the registered parent/a parent/b", *given)
	}
	if len(x.Subs) != 0 {
		t.Errorf("%d sub-handlers left to run after the parent returns, want none", len(x.Subs))
	}
	if err := c.Execute(context.Background()); err != nil || len(*given) != 1 {
		t.Errorf("a second Execute() = %v and gave the engine %v; want nothing more to run", err, *given)
	}

	c, _, _ = executing(spec.SubsOutcome{})
	c.Register("", nop)
	if err := c.Execute(context.Background()); err == nil || !strings.Contains(err.Error(), "empty id") {
		t.Errorf("Execute() of a bad registration = %v", err)
	}
}

func TestExecuteOutsideChangeHandlersIsAPermanentError(t *testing.T) {
	c := handlers.CauseWith(handlers.NewRegistry(), "timer", &handlers.Extras{})
	err := c.Execute(context.Background(), handlers.Sub("a", nop))
	var perm *handlers.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "Cause.Execute is for change handlers") {
		t.Fatalf("Execute = %v", err)
	}
}
