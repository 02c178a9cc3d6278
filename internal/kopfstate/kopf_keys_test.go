package kopfstate

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// The expected values below come from Kopf's own functions
// (kopf/_cogs/configs/conventions.py) and Python's hashlib.blake2b.

func TestKopfKeysAreTheKeysKopfWritesAHandlersRecordUnder(t *testing.T) {
	const long = "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com"
	for _, c := range []struct {
		prefix, id string
		want       []string
	}{
		{"kopf.zalando.org", "create_fn", []string{"kopf.zalando.org/create_fn"}},
		{"kopf.zalando.org", "field_fn/spec.field", []string{"kopf.zalando.org/field_fn.spec.field"}},
		{"kopf.zalando.org", "parent/child<1>", []string{"kopf.zalando.org/parent.child_1_"}},
		{"kopf.zalando.org", strings.Repeat("x", 46), []string{"kopf.zalando.org/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}},
		{"kopf.zalando.org", strings.Repeat("x", 47), []string{"kopf.zalando.org/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "kopf.zalando.org/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-xRCOAQ"}},
		{"kopf.zalando.org", "handler_with_a_rather_long_name_for_testing/spec.some.deep.field.path", []string{"kopf.zalando.org/handler_with_a_rather_long_name_for_testing.spec.some.de-is5paw", "kopf.zalando.org/handler_with_a_rather_long_name_for_tes-mvEvjA"}},
		{"kopf.zalando.org", strings.Repeat("y", 63), []string{"kopf.zalando.org/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy", "kopf.zalando.org/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy-P.o4Tg"}},
		{"kopf.zalando.org", strings.Repeat("y", 64), []string{"kopf.zalando.org/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy-0d251g", "kopf.zalando.org/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy-0d251g"}},
		{"kopf.zalando.org", strings.Repeat("z", 130), []string{"kopf.zalando.org/zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-N7xRiA", "kopf.zalando.org/zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-N7xRiA"}},
		{"kopf.zalando.org", "", []string{"kopf.zalando.org/"}},
		{"example.com", "create_fn", []string{"example.com/create_fn"}},
		{"example.com", "field_fn/spec.field", []string{"example.com/field_fn.spec.field"}},
		{"example.com", "parent/child<1>", []string{"example.com/parent.child_1_"}},
		{"example.com", strings.Repeat("x", 46), []string{"example.com/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}},
		{"example.com", strings.Repeat("x", 47), []string{"example.com/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}},
		{"example.com", "handler_with_a_rather_long_name_for_testing/spec.some.deep.field.path", []string{"example.com/handler_with_a_rather_long_name_for_testing.spec.some.de-is5paw", "example.com/handler_with_a_rather_long_name_for_testing.-mvEvjA"}},
		{"example.com", strings.Repeat("y", 63), []string{"example.com/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy", "example.com/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy-P.o4Tg"}},
		{"example.com", strings.Repeat("y", 64), []string{"example.com/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy-0d251g", "example.com/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy-0d251g"}},
		{"example.com", strings.Repeat("z", 130), []string{"example.com/zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-N7xRiA", "example.com/zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-N7xRiA"}},
		{"example.com", "", []string{"example.com/"}},
		{long, "create_fn", []string{"a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/create_fn", "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/-AZjFuA"}},
		{long, "field_fn/spec.field", []string{"a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/field_fn.spec.field", "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/-awcpPg"}},
		{long, "parent/child<1>", []string{"a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/parent.child_1_", "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/-arPWjg"}},
		{long, strings.Repeat("x", 46), []string{"a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/xxxxxxxxxxxxxxxxxxxxxxxx-.IBOiA"}},
		{long, strings.Repeat("x", 47), []string{"a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/xxxxxxxxxxxxxxxxxxxxxxxxx-xRCOAQ"}},
		{long, "handler_with_a_rather_long_name_for_testing/spec.some.deep.field.path", []string{"a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/handler_with_a_rather_long_name_for_testing.spec.some.de-is5paw", "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/handler_with_a_rather_long_name_for_testing.spe-mvEvjA"}},
		{long, strings.Repeat("y", 63), []string{"a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy", "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy-P.o4Tg"}},
		{long, strings.Repeat("y", 64), []string{"a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy-0d251g", "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy-0d251g"}},
		{long, strings.Repeat("z", 130), []string{"a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-N7xRiA", "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-N7xRiA"}},
		{long, "", []string{"a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/", "a-very-long-prefix-for-an-operator-that-exceeds-sixty-three-chars.example.com/-EnHPJQ"}},
	} {
		got := kopfKeys(c.prefix, c.id, false)
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("kopfKeys(%q, %q) =\n %q\nwant\n %q", c.prefix, c.id, got, c.want)
		}
	}
}

func TestKopfMarksTheKeysOfAReplicaSetOfADeployment(t *testing.T) {
	if got := kopfKeys("kopf.zalando.org", "create_fn", true); len(got) != 1 || got[0] != "kopf.zalando.org/create_fn-ofDRS" {
		t.Errorf("kopfKeys = %q", got)
	}
}

func TestBlake2bDigestsMatchPythonsAcrossBlockBoundaries(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{
		{0, "1271cf25"},
		{1, "ca234c55"},
		{3, "be391f3a"},
		{127, "d52a9199"},
		{128, "12cabd16"},
		{129, "55ada03e"},
		{256, "c507e6f5"},
		{300, "a5de59a0"},
	} {
		got := blake2b32([]byte(strings.Repeat("a", c.n)))
		if hex.EncodeToString(got[:]) != c.want {
			t.Errorf("blake2b32(%d bytes) = %x, want %s", c.n, got, c.want)
		}
	}
}

func TestKopfTimesReadAndWriteAsPythonsIsoformat(t *testing.T) {
	for _, text := range []string{"2026-11-23T03:08:19.302313+00:00", "2026-11-23T03:08:19+00:00"} {
		parsed, err := ParseTime(text)
		if err != nil {
			t.Fatalf("parseKopfTime(%q): %v", text, err)
		}
		if got := formatKopfTime(parsed); got != text {
			t.Errorf("formatKopfTime(parseKopfTime(%q)) = %q", text, got)
		}
	}
	naive, err := ParseTime("2020-02-14T16:58:25.396364")
	if err != nil || !naive.Equal(time.Date(2020, 2, 14, 16, 58, 25, 396364000, time.UTC)) {
		t.Errorf("a naive time (older Kopf) reads as %v, %v; want it in UTC", naive, err)
	}
	if _, err := ParseTime("yesterday"); err == nil {
		t.Error("parseKopfTime accepts nonsense")
	}
}
