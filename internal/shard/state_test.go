package shard

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// renewed is the time every lease of these tests was last renewed.
var renewed = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// lease returns the Lease of shard held by holder, renewed at renewed for
// seconds.
func lease(shard, holder string, seconds int32) coordinationv1.Lease {
	t := metav1.NewMicroTime(renewed)
	return coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: shard, Labels: map[string]string{RingLabel: "ring"}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(seconds), AcquireTime: &t, RenewTime: &t,
		},
	}
}

func TestAShardsStateFollowsTheReferencesRulesOverTime(t *testing.T) {
	const d = 10 * time.Second
	at := func(after time.Duration) time.Time { return renewed.Add(after) }
	held, released, claimed := lease("s1", "s1", 10), lease("s1", "", 10), lease("s1", ClaimIdentity, 10)
	noTimes := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "s1"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("s1")}}
	for _, tc := range []struct {
		what    string
		lease   coordinationv1.Lease
		after   time.Duration
		want    State
		changes time.Time
	}{
		{"held, just renewed", held, 0, Ready, at(d)},
		{"held, just before expiry", held, d - time.Millisecond, Ready, at(d)},
		{"held, at expiry", held, d, Expired, at(2 * d)},
		{"held, expired a while", held, d + d/2, Expired, at(2 * d)},
		{"held, expired a lease duration ago", held, 2 * d, Uncertain, time.Time{}},
		{"held, expired long ago", held, time.Hour, Uncertain, time.Time{}},
		{"released, just now", released, 0, Dead, at(d + time.Minute)},
		{"released, before it would have expired", released, d / 2, Dead, at(d + time.Minute)},
		{"released, a minute after it would have expired", released, d + time.Minute, Orphaned, time.Time{}},
		{"claimed by the assigner", claimed, 0, Dead, at(d + time.Minute)},
		{"claimed long ago", claimed, time.Hour, Orphaned, time.Time{}},
		{"held by a stranger", lease("s1", "s2", 10), 0, Dead, at(d + time.Minute)},
		{"without times, expiring now", noTimes, 0, Expired, at(missingLeaseDuration)},
	} {
		now := at(tc.after)
		if tc.lease.Spec.RenewTime == nil {
			now = renewed
		}
		got := ShardOf(&tc.lease, now)
		if got.Name != "s1" || got.State != tc.want || !got.Changes.Equal(tc.changes) {
			t.Errorf("%s: %s changing at %v, want %s changing at %v", tc.what, got.State, got.Changes, tc.want, tc.changes)
		}
	}
}

func TestAvailableShardsAreReadyExpiredOrUncertain(t *testing.T) {
	for s, want := range map[State]bool{Unknown: false, Orphaned: false, Dead: false, Uncertain: true, Expired: true, Ready: true} {
		if s.Available() != want {
			t.Errorf("%s available: %v, want %v", s, s.Available(), want)
		}
	}
	now := renewed.Add(25 * time.Second)
	shards := ShardsOf([]coordinationv1.Lease{
		lease("ready", "ready", 30),
		lease("expired", "expired", 20),
		lease("uncertain", "uncertain", 10),
		lease("dead", "", 30),
		lease("claimed", ClaimIdentity, 30),
	}, now)
	if got, want := shards.Available(), []string{"ready", "expired", "uncertain"}; !slices.Equal(got, want) {
		t.Errorf("available shards %v, want %v (states %v)", got, want, shards)
	}
	if got, want := shards.Ring().ShardFor("/ConfigMap/default/foo"), NewRing("ready", "expired", "uncertain").ShardFor("/ConfigMap/default/foo"); got != want {
		t.Errorf("the ring of the available shards gives %q, want %q", got, want)
	}
}

func TestStatesAreNamedAsTheReferenceLabelsThem(t *testing.T) {
	got := []string{}
	for _, s := range []State{Unknown, Orphaned, Dead, Uncertain, Expired, Ready} {
		got = append(got, s.String())
	}
	if want := []string{"unknown", "orphaned", "dead", "uncertain", "expired", "ready"}; !slices.Equal(got, want) {
		t.Errorf("state names %v, want %v", got, want)
	}
}

func TestAClaimedLeaseIsHeldByTheAssignerForTwiceItsDuration(t *testing.T) {
	l := lease("s1", "s1", 10)
	l.Spec.LeaseTransitions = ptr.To(int32(3))
	now := renewed.Add(20 * time.Second)
	if s := ShardOf(&l, now); s.State != Uncertain {
		t.Fatalf("before the claim: %s, want uncertain", s.State)
	}
	Claim(&l, now)
	if *l.Spec.HolderIdentity != ClaimIdentity || *l.Spec.LeaseDurationSeconds != 20 || *l.Spec.LeaseTransitions != 4 ||
		!l.Spec.RenewTime.Time.Equal(now) || !l.Spec.AcquireTime.Time.Equal(now) {
		t.Errorf("claimed lease spec %+v", l.Spec)
	}
	if s := ShardOf(&l, now); s.State != Dead {
		t.Errorf("after the claim: %s, want dead", s.State)
	}
}

func TestShardsChangeWhenTheFirstOfThemChanges(t *testing.T) {
	held, released, old := lease("s1", "s1", 10), lease("s2", "", 10), lease("s3", "s3", 10)
	now := renewed.Add(5 * time.Second)
	if got, want := ShardsOf([]coordinationv1.Lease{released, held}, now).Changes(), renewed.Add(10*time.Second); !got.Equal(want) {
		t.Errorf("a Ready shard expiring at %v and a Dead one: changes at %v", want, got)
	}
	if got := ShardsOf([]coordinationv1.Lease{old}, renewed.Add(time.Hour)).Changes(); !got.IsZero() {
		t.Errorf("only an Uncertain shard: changes at %v, want never", got)
	}
	if got := (Shards{}).Changes(); !got.IsZero() {
		t.Errorf("no shards: changes at %v, want never", got)
	}
}
